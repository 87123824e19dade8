"""Stage 4, accounting: every byte at the moment that matters — allocated, cached, free blocks, driver-visible, outside PyTorch."""

from vramlens.analysis.accounting.stage import Accounted, account

__all__ = ["Accounted", "account"]
