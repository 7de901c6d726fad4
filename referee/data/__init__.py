"""The package's data and the scripts that make it: the protocol's JSON Schema files
(``make_schemas.py``, from the protocol models) and the look-alike table of
:mod:`referee.names` (``make_confusables.py``, from Unicode's ``confusables.txt``).

A package (not a bare folder) so that the import contracts in ``pyproject.toml`` see the
scripts and place them above the protocol models they read; nothing imports them.
"""
