"""The plan and its record: the tournament file, the scheduler, seating, balanced designs,
deals and the store.

Import the modules themselves; this package re-exports nothing, so importing one part
never loads the rest.
"""
