"""Baseline: the schema of ``PRAGMA user_version`` 3 (releases up to 0.1).

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

from alembic import op

from vaultfs.server.storage import legacy_schema

revision = "0001"
down_revision: str | None = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for script in legacy_schema.MIGRATIONS:
            for statement in legacy_schema.statements(script):
                bind.exec_driver_sql(statement)
        # Releases that still read user_version see an up-to-date file.
        bind.exec_driver_sql(f"PRAGMA user_version = {legacy_schema.LEGACY_VERSION}")
    else:
        for statement in legacy_schema.postgres_baseline():
            bind.exec_driver_sql(statement)


def downgrade() -> None:
    raise NotImplementedError("the baseline is not removed")
