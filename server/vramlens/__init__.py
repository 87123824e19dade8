"""VRAM Lens: why a PyTorch program ran out of GPU memory, and which line is responsible."""

__version__ = "0.1.0"
