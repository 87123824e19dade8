"""Floor 2: what one file's syntax proves: definitions, grad modes, modules by evidence, tensor types, library knowledge."""
