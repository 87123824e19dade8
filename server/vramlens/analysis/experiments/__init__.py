"""Controlled experiments: variants of one run measured side by side, the noise test, find-max."""
