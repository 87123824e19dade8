"""The VRAM Lens language server: pygls adapters that translate engine results to LSP types."""
