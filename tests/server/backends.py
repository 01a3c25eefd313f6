"""Which database a test vault runs on, and SQL run straight on it (as an admin would)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from tests.vaultproc import VaultProcess

__all__ = ["backend_of", "run_sql"]


def _database_url(server: VaultProcess) -> str | None:
    args = server.extra_args
    return args[args.index("--database") + 1] if "--database" in args else None


def backend_of(server: VaultProcess) -> str:
    """``sqlite`` or ``postgresql``."""
    return "sqlite" if _database_url(server) is None else "postgresql"


def run_sql(server: VaultProcess, statement: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement (``?`` placeholders) in the vault's database and commit it."""
    url = _database_url(server)
    if url is None:
        import sqlite3

        with sqlite3.connect(Path(server.data_dir) / "vault.sqlite3") as db:
            db.execute(statement, params)
        return
    with psycopg.connect(url, password=server.env["PGPASSWORD"]) as conn:
        conn.execute(statement.replace("?", "%s"), params)
