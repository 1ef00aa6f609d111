"""Persistence manager (lead's module; see __init__.py)."""
