"""Floor 3: how values and calls flow through a file: the call graph, what callers imply, reachability, taint."""
