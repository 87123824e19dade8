"""Comparing two analyses of one program: before and after a change."""
