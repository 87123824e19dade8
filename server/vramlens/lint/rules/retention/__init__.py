"""Autograd graphs kept alive: stored values that carry their graph, retain_graph/create_graph in loops."""
