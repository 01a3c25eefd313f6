"""Backups of a running vault and restores, on either backend (and across them).

A backup is one tar archive (mode 0600: it holds password hashes and every document):
``manifest.json`` (format, schema revision, row counts, id sequences), one JSON-lines
file per table, and the blobs the records reference. The records are read in one
read transaction (a snapshot: SQLite's WAL read, PostgreSQL's REPEATABLE READ), so
a backup taken while servers write is consistent; blobs are immutable once written,
so copying them after the snapshot is safe.

A restore loads an archive into an empty database at the archive's schema revision,
sets the id sequences past the restored ids (ids are never handed out twice), copies
and verifies the blobs (a blob's name is its sha256), then upgrades to the newest
revision. The format is neutral, so a SQLite vault restores into PostgreSQL too, and
either content store (the directory or a bucket) backs up into and restores from it.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from . import schema
from .content import ContentStore, ContentUnavailable, WrongContent
from .db import Database
from .sql import Conn, SqlConnection, is_postgres

__all__ = ["BackupError", "make_backup", "restore_backup"]

FORMAT = "vaultfs-backup-1"
#: Tables in an order where every row's references come before it.
TABLES = [
    "vaults", "users", "vault_members", "sessions", "doc_types", "doc_fields", "lifecycles",
    "lifecycle_states", "lifecycle_actions", "entry_requirements", "rendition_types",
    "relationship_types", "event_types", "documents", "versions", "renditions", "attachments",
    "attachment_versions", "deletions", "domains", "vault_settings", "groups", "group_members",
    "document_roles", "relationships", "document_events", "workflows", "favorites",
    "crosslinks", "blob_text", "vaultfs_clock", "vaultfs_windows",
]  # fmt: skip
#: Tables whose ``id`` the database hands out (SQLite AUTOINCREMENT, PostgreSQL identity).
SEQUENCED = ["users", "documents", "attachments", "groups", "relationships",
             "document_events", "workflows"]  # fmt: skip
#: Explicit columns where ``*`` would not do (PostgreSQL's generated tsvector).
_COLUMNS = {"blob_text": "sha256, body"}
#: Row order: types before their subtypes and classifications (``parent`` references).
_ORDER = {"doc_types": "CASE level WHEN 'type' THEN 0 WHEN 'subtype' THEN 1 ELSE 2 END, name"}
_CHUNK = 1024 * 1024


class BackupError(Exception):
    """An archive that cannot be made or restored; the message says why."""


def _rows(conn: Conn, table: str) -> Iterator[dict[str, Any]]:
    columns = _COLUMNS.get(table, "*")
    order = _ORDER.get(table, "1")
    for row in conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}").fetchall():
        yield dict(zip(row.keys(), row, strict=True))


def _sequences(conn: Conn) -> dict[str, int]:
    """The last id each sequenced table handed out (deleted rows' ids included)."""
    if is_postgres(conn):
        found = {}
        for table in SEQUENCED:
            row = conn.execute(
                f"SELECT last_value, is_called FROM {_pg_sequence(conn, table)}"
            ).fetchone()
            found[table] = int(row[0]) if row[1] else 0
        return found
    rows = conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall()
    return {str(r[0]): int(r[1]) for r in rows if r[0] in SEQUENCED}


def _pg_sequence(conn: Conn, table: str) -> str:
    return str(conn.execute("SELECT pg_get_serial_sequence(?, 'id')", (table,)).fetchone()[0])


def _add(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
    archive.addfile(info, io.BytesIO(data))


def make_backup(
    db: Database,
    blobs: ContentStore,
    # (typed loosely: callers' functions may name sqlite3's connection type)
    referenced: Callable[[Any], set[str]],
    target: Path,
) -> dict[str, Any]:
    """Write the archive ``target`` (blocking); returns its manifest."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out, tarfile.open(fileobj=out, mode="w:gz") as archive:

        def snapshot(conn: Conn) -> tuple[dict[str, Any], set[str]]:
            counts = {}
            for table in TABLES:
                lines = [json.dumps(row, separators=(",", ":")) for row in _rows(conn, table)]
                _add(archive, f"tables/{table}.jsonl", "\n".join(lines).encode())
                counts[table] = len(lines)
            revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
            manifest = {
                "format": FORMAT,
                "revision": revision,
                "created_ms": time.time_ns() // 1_000_000,
                "rows": counts,
                "sequences": _sequences(conn),
            }
            return manifest, referenced(conn)

        manifest, wanted = db.read_sync(snapshot)
        for sha256 in sorted(wanted):
            _add_blob(archive, blobs, sha256)
        manifest["blobs"] = len(wanted)
        _add(archive, "manifest.json", json.dumps(manifest, indent=1).encode())
    return manifest


def _add_blob(archive: tarfile.TarFile, blobs: ContentStore, sha256: str) -> None:
    """Stream one stored file into the archive (never whole in memory)."""
    try:
        reading = blobs.read(sha256)
    except FileNotFoundError:
        raise BackupError(f"blob {sha256} is referenced but missing from {blobs}") from None
    except ContentUnavailable as exc:
        raise BackupError(f"blob {sha256}: {exc}") from None
    try:
        info = tarfile.TarInfo(f"blobs/{sha256}")
        info.size, info.mode, info.mtime = reading.size, 0o600, int(time.time())
        archive.addfile(info, _FullReads(reading.body))
    finally:
        reading.body.close()


class _FullReads:
    """A stream whose ``read(n)`` returns n bytes until the end (tarfile counts on it;
    a network body may return fewer)."""

    def __init__(self, body: Any) -> None:
        self._body = body

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            return bytes(self._body.read())
        parts = []
        while size > 0 and (part := self._body.read(size)):
            parts.append(part)
            size -= len(part)
        return b"".join(parts)


def restore_backup(db: Database, blobs: ContentStore, source: Path) -> dict[str, Any]:
    """Load the archive ``source`` into the empty ``db`` and ``blobs`` (blocking);
    returns the archive's manifest."""
    with tarfile.open(source, mode="r:*") as archive:
        manifest = _manifest(archive)
        db.open(manifest["revision"])
        with db.begin_write() as conn:
            _load_tables(conn, archive, manifest)
        for member in archive.getmembers():
            if member.name.startswith("blobs/") and member.isfile():
                _restore_blob(archive, member, blobs)
    with db.begin_write() as conn:
        schema.upgrade(conn)
    return manifest


def _manifest(archive: tarfile.TarFile) -> dict[str, Any]:
    try:
        member = archive.extractfile("manifest.json")
    except KeyError:
        member = None
    if member is None:
        raise BackupError("not a vaultfs backup: no manifest.json")
    manifest: dict[str, Any] = json.load(member)
    if manifest.get("format") != FORMAT:
        raise BackupError(f"unknown backup format {manifest.get('format')!r}")
    return manifest


def _load_tables(conn: Connection, archive: tarfile.TarFile, manifest: dict[str, Any]) -> None:
    sql: Conn = SqlConnection(conn)
    if sql.execute("SELECT count(*) FROM vaults").fetchone()[0]:
        raise BackupError("the target database is not empty; restore into a new one")
    # The new database's own fixed rows (made by its migrations) give way to the archive's.
    for table in ("domains", "vaultfs_clock"):
        if table in manifest["rows"]:
            sql.execute(f"DELETE FROM {table}")
    for table in TABLES:
        if table not in manifest["rows"]:
            continue
        member = archive.extractfile(f"tables/{table}.jsonl")
        if member is None:
            raise BackupError(f"tables/{table}.jsonl is missing")
        rows = [json.loads(line) for line in member.read().decode().splitlines() if line]
        if not rows:
            continue
        columns = list(rows[0])
        marks = ", ".join("?" * len(columns))
        sql.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
            [tuple(row[c] for c in columns) for row in rows],
        )
    _set_sequences(sql, manifest["sequences"])


def _set_sequences(conn: Conn, sequences: dict[str, int]) -> None:
    for table in SEQUENCED:
        last = max(
            int(sequences.get(table, 0)),
            int(conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]),
        )
        if last == 0:
            continue
        if is_postgres(conn):
            conn.execute(f"SELECT setval('{_pg_sequence(conn, table)}', ?)", (last,))
        else:
            conn.execute("DELETE FROM sqlite_sequence WHERE name = ?", (table,))
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (table, last))


def _restore_blob(archive: tarfile.TarFile, member: tarfile.TarInfo, blobs: ContentStore) -> None:
    source = archive.extractfile(member)
    assert source is not None
    try:
        blobs.put_stream(source, member.size, _CHUNK, expect=member.name.removeprefix("blobs/"))
    except ContentUnavailable as exc:
        raise BackupError(f"{member.name}: {exc}") from None
    except WrongContent:
        raise BackupError(f"{member.name} does not hold the content its name promises") from None
