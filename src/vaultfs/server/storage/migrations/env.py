"""Alembic environment: migrations run on the connection ``schema.upgrade`` hands over,
inside its transaction (so a failed upgrade leaves the database as it was)."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, transactional_ddl=True)
with context.begin_transaction():
    context.run_migrations()
