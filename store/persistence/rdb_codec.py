"""Redis's RDB v10 format (helper R's module; see __init__.py)."""
