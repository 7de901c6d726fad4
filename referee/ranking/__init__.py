"""From stored results to an order: ratings, intervals, play-offs.

Import the modules themselves; this package re-exports nothing, so importing one part
never loads the rest.
"""
