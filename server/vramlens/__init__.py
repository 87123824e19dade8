"""VRAM Lens: why a PyTorch program ran out of GPU memory, and which line is responsible."""

__version__ = "0.1.0"


def load_ipython_extension(ipython) -> None:
    """``%load_ext vramlens`` in a Jupyter or IPython kernel: the ``%vramlens`` magics
    (server/vramlens/agent/ipython_ext.py). Nothing else of vramlens is imported into the kernel."""
    from vramlens.agent.ipython_ext import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from vramlens.agent.ipython_ext import unload_ipython_extension as unload

    unload(ipython)
