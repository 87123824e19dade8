"""Grad mode: inference code that records a graph nobody uses."""
