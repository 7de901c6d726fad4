"""One match: the runner, the human seat, the compliance run, a match told as text.

Import the modules themselves; this package re-exports nothing, so importing one part
never loads the rest.
"""
