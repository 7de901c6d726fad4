"""Tournament referee for Arschloch / Trou du cul / Président card-game bots."""

__version__ = "0.1.0"
