"""The multi-part append-only file (helper A's module; see __init__.py)."""
