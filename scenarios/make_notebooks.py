"""Writes the notebooks of the GPU scenarios (nbformat), so each is the same on every machine:
    python scenarios/make_notebooks.py
notebook_kept_outputs.ipynb: outputs displayed with their autograd graphs stay in Out[n], a list of
losses keeps more graphs, and a large allocation in the last cell runs out under --memory-limit 4GiB.
"""

from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
KEPT_OUTPUTS = [
    ("markdown", "# Outputs kept with their graphs\nEach displayed loss stays in `Out[n]` with the activations its graph saved."),
    ("code", "import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(6)]).cuda()"),
    ("code", "def loss_of(batch):\n    x = torch.randn(batch, 2048, device=\"cuda\")\n    return model(x).square().mean()"),
    ("code", "loss_of(4096)"),
    ("code", "loss_of(4096)"),
    ("code", "losses = [loss_of(4096) for _ in range(8)]"),
    ("code", "big = torch.empty(3 * 2**30, dtype=torch.uint8, device=\"cuda\")"),
]


def write(name: str, cells: list[tuple[str, str]]) -> None:
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    book.cells = [nbformat.v4.new_code_cell(text) if kind == "code" else nbformat.v4.new_markdown_cell(text)
                  for kind, text in cells]
    for number, cell in enumerate(book.cells):
        cell["id"] = f"{name}-{number}"  # stable ids: the notebook does not change each time it is written
    nbformat.write(book, str(HERE / f"{name}.ipynb"))


if __name__ == "__main__":
    write("notebook_kept_outputs", KEPT_OUTPUTS)
