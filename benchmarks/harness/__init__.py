"""The evaluation harness: where the corpora and workloads of this repository live, and their helper
modules as importable modules, for the benchmarks (run as ``python benchmarks/NAME.py``, which puts
benchmarks/ on the path) and the tests (pyproject.toml's ``pythonpath`` names benchmarks/).

    from harness import paths                      # REPO, WORKLOADS, REALWORLD_CAPTURES, ...
    from harness.workloads import manifest, ground_truth
    from harness.lint_corpus import realworld      # tests/lint/realworld: the real-code lint corpora

It is not part of the vramlens package and never ships in the wheel or the .vsix.
"""
