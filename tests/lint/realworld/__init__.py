"""The real-code lint corpora: recall cases taken from public bug fixes and precision codebases taken from public
projects, how they are built from their git sources, and how the linter is scored against them."""
