"""Stage 5, accounting: every byte at the moment that matters — allocated, cached, free blocks, driver-visible, outside PyTorch."""
