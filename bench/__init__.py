"""Benchmarks (``make bench``): figures measured side by side in one run, printed as ratios."""
