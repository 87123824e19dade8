"""Several ranks of one torchrun launch: each analysed alone, then compared."""
