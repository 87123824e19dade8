"""Experiments: the same script run again with one thing changed, measured and judged.

Above both the runner (which starts each run) and the analysis (which reads each capture and
judges the runs): `engine` runs variants and the search for the largest argument that fits,
`confirm` the experiment that separates a diagnosis from its runner-up, `try_alloc_conf` the
`vramlens run --try-alloc-conf` trials side by side. The CLI and the editor call these; the
runner itself knows nothing of analyses.
"""
