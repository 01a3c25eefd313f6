"""Which database and content store a test vault runs on, SQL run straight on its
database (as an admin would), and the files its content store holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from vaultfs.testing.vault_process import VaultProcess

__all__ = ["backend_of", "bucket_of", "incoming_dir", "run_sql", "stored_files"]


def _argument(server: VaultProcess, name: str) -> str | None:
    args = server.extra_args
    return args[args.index(name) + 1] if name in args else None


def _database_url(server: VaultProcess) -> str | None:
    return _argument(server, "--database")


def backend_of(server: VaultProcess) -> str:
    """``sqlite`` or ``postgresql``."""
    return "sqlite" if _database_url(server) is None else "postgresql"


def bucket_of(server: VaultProcess) -> tuple[str, str] | None:
    """(bucket, key prefix) of a vault whose files are in a bucket, else None."""
    content = _argument(server, "--content")
    if content is None or not content.startswith("s3://"):
        return None
    bucket, _, prefix = content.removeprefix("s3://").partition("/")
    return bucket, prefix.strip("/") + "/"


def incoming_dir(server: VaultProcess) -> Path:
    """Where the vault receives files before they go to its store."""
    if bucket_of(server) is None:
        return server.data_dir / "blobs" / "tmp"
    return server.data_dir / "incoming"


def stored_files(server: VaultProcess, s3: Any = None) -> set[str]:
    """The names of the files in the vault's content store (``s3``: the S3Server, for
    a vault whose files are in a bucket)."""
    found = bucket_of(server)
    if found is None:
        return {p.name for p in (server.data_dir / "blobs").rglob("*") if p.is_file()}
    bucket, prefix = found
    return {key.rsplit("/", 1)[-1] for key in s3.keys(bucket, prefix)}


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
