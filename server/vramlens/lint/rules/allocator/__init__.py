"""The caching allocator: emptying its cache on every iteration."""
