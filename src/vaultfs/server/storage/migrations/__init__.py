"""Alembic migrations of the vault database (see ``storage/schema.py``)."""
