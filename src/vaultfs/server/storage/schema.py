"""Schema versions and upgrades of the vault database (Alembic), on both backends.

A database is at an Alembic revision (table ``alembic_version``); ``upgrade`` brings it
to the newest at every start, in the start-up transaction. The baseline revision
``0001`` is the schema releases up to 0.1 made, which versioned SQLite files with
``PRAGMA user_version`` instead: such a file is first brought to that schema's last
version by its own scripts, then stamped ``0001``, then upgraded like any other, so
a vault made by an older release opens with this one and keeps every record.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from . import legacy_schema

__all__ = ["BASELINE", "current_revision", "head_revision", "upgrade"]

#: The Alembic revision that is the schema of ``PRAGMA user_version`` 3.
BASELINE = "0001"
_SCRIPTS = Path(__file__).with_name("migrations")


def _config(conn: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.attributes["connection"] = conn
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def upgrade(conn: Connection, target: str = "head") -> None:
    """Bring the database to ``target`` (the newest revision), inside the caller's
    transaction."""
    if conn.dialect.name == "sqlite":
        _adopt_user_version(conn)
    wanted = head_revision() if target == "head" else target
    if current_revision(conn) != wanted:
        command.upgrade(_config(conn), wanted)


def _adopt_user_version(conn: Connection) -> None:
    """Stamp a SQLite file made before Alembic at the baseline (after its own scripts)."""
    if current_revision(conn) is not None:
        return
    version = int(conn.exec_driver_sql("PRAGMA user_version").scalar_one())
    if version == 0:
        # A new file: the baseline revision creates everything.
        return
    for script in legacy_schema.MIGRATIONS[version:]:
        for statement in legacy_schema.statements(script):
            conn.exec_driver_sql(statement)
    conn.exec_driver_sql(f"PRAGMA user_version = {legacy_schema.LEGACY_VERSION}")
    command.stamp(_config(conn), BASELINE)
