"""Shared state of several server processes: the change clock and the call counters.

Revision ID: 0002
Revises: 0001

``vaultfs_clock`` holds the last modification time handed out, so processes sharing
a database never give two changes the same time. ``vaultfs_windows`` holds the fixed
windows of the API and login limits (one row per counted key).
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE TABLE vaultfs_clock (id INTEGER PRIMARY KEY CHECK (id = 1),"
        " last_ms BIGINT NOT NULL)"
    )
    op.execute("INSERT INTO vaultfs_clock (id, last_ms) VALUES (1, 0)")
    op.execute(
        "CREATE TABLE vaultfs_windows (name TEXT PRIMARY KEY, start_ms BIGINT NOT NULL,"
        " count BIGINT NOT NULL, expires_ms BIGINT NOT NULL)"
    )
    op.execute("CREATE INDEX vaultfs_windows_expiry ON vaultfs_windows (expires_ms)")


def downgrade() -> None:
    op.execute("DROP TABLE vaultfs_windows")
    op.execute("DROP TABLE vaultfs_clock")
