"""Talking to one bot: its messages, framing, the protocol's dialect, the session pool,
and fault explanations.

Import the modules themselves; this package re-exports nothing, so importing one part
never loads the rest.
"""
