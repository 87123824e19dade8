"""Floor 7: the driver over the catalog's rules: chunks and caching, suppression, notebooks, fixing."""
