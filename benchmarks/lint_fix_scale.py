"""How `vramlens lint --fix` scales with the number of findings: N copies of a loop that accumulates a loss
with its graph (one VL101 each, one fix each), linted and fixed in process.

    python benchmarks/lint_fix_scale.py [N ...]        # default: 250 1000 4000
"""

from __future__ import annotations

import sys
import time

from vramlens.lint import fix_source, lint_source

LOOP = ("def train{i}(loader):\n    total = 0.0\n    for x, y in loader:\n        loss = criterion(model(x), y)\n"
        "        loss.backward()\n        total += loss\n    return total\n")
HEAD = "import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 4)\ncriterion = nn.MSELoss()\n"


def main() -> None:
    counts = [int(arg) for arg in sys.argv[1:]] or [250, 1000, 4000]
    print("findings  lines    lint (s)  fix (s)  fixed")
    for count in counts:
        source = HEAD + "".join(LOOP.format(i=i) for i in range(count))
        start = time.perf_counter()
        findings = lint_source(source)
        linted = time.perf_counter()
        result = fix_source(source)
        fixed = time.perf_counter()
        print(f"{len(findings):8d}  {source.count(chr(10)):6d}  {linted - start:8.2f}  {fixed - linted:7.2f}  {result.applied}")


if __name__ == "__main__":
    main()
