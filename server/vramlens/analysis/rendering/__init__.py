"""Stage 8, rendering: the analysis for people (text report, timeline SVG, redaction) and for programs (--json).

Every sentence and label people read is made here, once, as rows of a small view model; the CLI's text
(analysis_text.py, ranks_text.py, experiment_text.py), the Markdown report (report.py), the editor's hover
(lsp/annotations.py) and the report view's payload (lsp/report_payload.py) only add their own markup:

- verdict_view.py: the cause in words, the line to change, the first fix;
- line_view.py: one attributed line (its figure, headline, blocks, holder, call path);
- storing_view.py: the line that keeps the memory;
- accounting_view.py: the accounting's rows and the one device total;
- memory_view.py: the census's roles and holders;
- experiment_view.py: an experiment's rows and notes;
- notebook_text.py: a notebook's cells and what its kernel keeps.

The moment an analysis is about ("at the OOM") is worded in load/ending.py, below diagnosis, which says it too.
"""
