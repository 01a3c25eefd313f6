"""The document index on disk: one SQLite file (WAL, mode 0600) per vault and user in
the mount's cache directory, the one place the index keeps its records.

Owns the file's schema (versioned; an older one is brought up to date in place, see
``_MIGRATIONS``), its identity (the vault URL and user it was built for, stored in it
and checked at every open: a mismatch is never read), its state (whether a build
finished, when the last poll was asked for) and the records with the columns a folder
listing needs (type, subtype, classification, name, modification date, and the times
a node's attributes are made of, as integers). A file that cannot be read, or of
another schema or identity, is set aside (renamed ``*.corrupt-<time>``) and a new one
made. Without a path the store lives in memory (unit tests, and a mount that cannot
write its cache directory).

Nothing at an open grows with the vault: the identity and schema are a few rows;
SQLite's ``quick_check`` (seconds at a million documents) runs only when the last
mount did not close the file (a crash, a kill -9), and the folders are a seek per
folder in the folder index (``folders``), not a read of every row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from cachetools import LRUCache

from vaultfs.wire import time_ns

__all__ = ["SCHEMA_VERSION", "Folder", "IndexStore", "Records", "Times", "index_file_name"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 5
_FILE_MODE = 0o600

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    subtype TEXT NOT NULL,
    classification TEXT NOT NULL,
    name TEXT NOT NULL,
    modified TEXT NOT NULL,
    build INTEGER NOT NULL,
    record TEXT NOT NULL,
    modified_ns INTEGER NOT NULL DEFAULT 0,
    created_ns INTEGER NOT NULL DEFAULT 0,
    born_ns INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS folder_modified ON documents (type, subtype, classification, modified);
CREATE INDEX IF NOT EXISTS folder_names
    ON documents (type, subtype, classification, name, id, modified_ns, created_ns, born_ns);
CREATE INDEX IF NOT EXISTS documents_build ON documents (build);
"""

#: schema version -> the statements that bring a file of it to the next version (one
#: transaction each, so a kill leaves the old version or the new one)
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    # 1 -> 2: the times as integers (attributes without decoding records), and the
    # folder index with the modification date (folders by seeking, not scanning).
    1: (
        "ALTER TABLE documents ADD COLUMN modified_ns INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE documents ADD COLUMN created_ns INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE documents ADD COLUMN born_ns INTEGER NOT NULL DEFAULT 0",
        "UPDATE documents SET"
        " modified_ns = time_ns(json_extract(record, '$.version_modified_date__v')),"
        " created_ns = time_ns(json_extract(record, '$.version_creation_date__v')),"
        " born_ns = time_ns(json_extract(record, '$.document_creation_date__v'))",
        "DROP INDEX IF EXISTS documents_folder",
        "CREATE INDEX folder_modified ON documents (type, subtype, classification, modified)",
    ),
    # 2 -> 3: a folder's names from an index that holds them (a folder of 100,000
    # documents: 0.12 s of CPU, not 0.35 s reading each row's record past them).
    2: ("CREATE INDEX folder_names ON documents (type, subtype, classification, name)",),
    # 3 -> 4: a document without a subtype sits in its type's folder whatever its
    # classification says (``nodes.folder_of``): stored so, a folder is three equalities
    # and its names come in the order of ``folder_names`` (no sort per page).
    3: ("UPDATE documents SET classification = '' WHERE subtype = '' AND classification != ''",),
    # 4 -> 5: the times in the folder index too, so that the lookups of a folder's
    # documents one after another read them a page at a time from the index's dense
    # pages (``times_from``), not a row each (a record's page, cold after a reboot:
    # 68 % of the daemon's CPU in ``gio list`` of a folder of 100,000).
    4: (
        "DROP INDEX folder_names",
        "CREATE INDEX folder_names"
        " ON documents (type, subtype, classification, name, id, modified_ns, created_ns, born_ns)",
    ),
}

Record = dict[str, Any]
#: a folder of documents: (type, subtype, classification), "" for a level it lacks
Folder = tuple[str, str, str]
_IN_FOLDER = "type = ? AND subtype = ? AND classification = ?"
#: a document's times in nanoseconds: (modified, version created, document created)
Times = tuple[int, int, int]


def index_file_name(vault_url: str, user: str) -> str:
    """The file of ``user``'s index of the vault at ``vault_url``: named by both, so
    one user's or vault's index is never opened for another."""
    digest = hashlib.sha256(f"{vault_url.rstrip('/')}\0{user}".encode()).hexdigest()[:24]
    return f"index-{digest}.sqlite"


def _row(record: Record, build: int) -> tuple[object, ...]:
    """The ``documents`` row of ``record`` (in the table's column order)."""
    modified = record.get("version_modified_date__v")
    subtype = str(record.get("subtype__v") or "")
    return (
        int(record["id"]),
        str(record.get("type__v") or ""),
        subtype,
        str(record.get("classification__v") or "") if subtype else "",
        str(record.get("name__v") or ""),
        str(modified or ""),
        build,
        json.dumps(record, separators=(",", ":")),
        time_ns(modified),
        time_ns(record.get("version_creation_date__v")),
        time_ns(record.get("document_creation_date__v")),
    )


class IndexStore:
    """The records and state of one index file; every write is one transaction."""

    def __init__(self, path: Path | None, *, vault_url: str = "", user: str = "") -> None:
        self.path = path
        self._identity = {"vault_url": vault_url.rstrip("/"), "user": user}
        #: why the file could not be used as it was (None: it could, or it is new)
        self.set_aside: str | None = None
        self._db = self._open()

    # --- opening ---------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if self.path is None:
            memory = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._create(memory)
            return memory
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        db: sqlite3.Connection | None = None
        try:
            db = self._connect()
            reason = self._check(db)
        except sqlite3.DatabaseError as exc:
            reason = f"the file cannot be read ({exc})"
        if reason is None and db is not None:
            self._mark_open(db)
            return db
        if db is not None:
            db.close()
        self.set_aside = reason
        self._move_aside()
        db = self._connect()
        self._create(db)
        self._mark_open(db)
        return db

    def _connect(self) -> sqlite3.Connection:
        assert self.path is not None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, _FILE_MODE)
        os.fchmod(fd, _FILE_MODE)
        os.close(fd)
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        for suffix in ("-wal", "-shm"):
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                os.chmod(side, _FILE_MODE)
        return db

    def _check(self, db: sqlite3.Connection) -> str | None:
        """None when ``db`` is a usable index of this vault and user (or empty)."""
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            self._create(db)
            return None
        if "meta" not in tables or "documents" not in tables:
            return "the file is not an index"
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        for key, value in self._identity.items():
            if meta.get(key) != value:
                return f"the file is the index of another {key.replace('_', ' ')}"
        if "open_by" in meta:
            # The last mount did not close the file: SQLite's journal keeps it whole
            # across a crash, but a damaged disk or a copy made meanwhile would not.
            # Said first: it reads the whole file (36 s at a million documents, busy).
            log.info("index %s: checking the file, which its last mount did not close", self.path)
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                return "the file is damaged"
        schema = meta.get("schema")
        while schema in {str(v) for v in _MIGRATIONS} and schema != str(SCHEMA_VERSION):
            self._migrate(db, int(schema))
            schema = str(int(schema) + 1)
        if schema != str(SCHEMA_VERSION):
            return f"the file is of schema {meta.get('schema')}, not {SCHEMA_VERSION}"
        return None

    def _migrate(self, db: sqlite3.Connection, version: int) -> None:
        db.create_function("time_ns", 1, time_ns, deterministic=True)
        with _transaction(db):
            for statement in _MIGRATIONS[version]:
                db.execute(statement)
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(version + 1),))
        log.info("index %s: schema %d brought to %d", self.path, version, version + 1)

    def _mark_open(self, db: sqlite3.Connection) -> None:
        """Say in the file that a mount has it open until ``close`` (see ``_check``)."""
        with _transaction(db):
            db.execute("INSERT OR REPLACE INTO meta VALUES ('open_by', ?)", (str(os.getpid()),))

    def _create(self, db: sqlite3.Connection) -> None:
        db.executescript(_SCHEMA)
        with _transaction(db):
            db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [("schema", str(SCHEMA_VERSION)), *self._identity.items()],
            )

    def _move_aside(self) -> None:
        assert self.path is not None
        stamp = time.strftime("%Y%m%dT%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            old = self.path.with_name(self.path.name + suffix)
            if old.exists():
                old.rename(old.with_name(f"{self.path.name}.corrupt-{stamp}{suffix}"))
        log.warning("index %s set aside: %s; building it again", self.path, self.set_aside)

    def close(self) -> None:
        with _transaction(self._db):
            self._db.execute("DELETE FROM meta WHERE key = 'open_by'")
        self._db.close()

    # --- state -----------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with _transaction(self._db):
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # --- records ---------------------------------------------------------------

    def get(self, doc_id: int) -> Record | None:
        row = self._db.execute("SELECT record FROM documents WHERE id = ?", (doc_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def times(self, doc_ids: list[int]) -> Iterator[tuple[int, Times]]:
        """(id, times) of those of ``doc_ids`` the index holds, without the records."""
        for doc_id, *times in self._by_ids("modified_ns, created_ns, born_ns", doc_ids):
            yield doc_id, (times[0], times[1], times[2])

    def times_from(self, doc_id: int, count: int, before: int = 0) -> list[tuple[int, Times]]:
        """(id, times) of ``doc_id`` and of the next ``count - 1`` documents of its
        folder, by name then id (the order of a folder's listing, and of the lookups
        of a program that stats what it listed): a seek in ``folder_names``; then of
        the ``before`` documents before it, nearest first."""
        rows = self._from("modified_ns, created_ns, born_ns", doc_id, count, before)
        return [(row[0], (row[1], row[2], row[3])) for row in rows]

    def texts_from(self, doc_id: int, count: int, before: int = 0) -> list[tuple[int, str]]:
        """(id, record as stored) of ``doc_id`` and of the documents of its folder
        around it, as ``times_from`` reads them (a walk goes into them next)."""
        return [(row[0], row[1]) for row in self._from("record", doc_id, count, before)]

    def _from(self, columns: str, doc_id: int, count: int, before: int) -> list[tuple[Any, ...]]:
        """(id, *columns) of ``doc_id`` and the next ``count - 1`` of its folder, then
        of the ``before`` before it (a seek each way in ``folder_names``)."""
        place = self.place(doc_id)
        if place is None:
            return []
        folder, name = place
        select = f"SELECT id, {columns} FROM documents WHERE {_IN_FOLDER}"
        rows = self._db.execute(
            f"{select} AND (name, id) >= (?, ?) ORDER BY name, id LIMIT ?",
            (*folder, name, doc_id, count),
        ).fetchall()
        if before > 0:
            rows += self._db.execute(
                f"{select} AND (name, id) < (?, ?) ORDER BY name DESC, id DESC LIMIT ?",
                (*folder, name, doc_id, before),
            ).fetchall()
        return rows

    def _by_ids(self, columns: str, doc_ids: list[int]) -> Iterator[tuple[Any, ...]]:
        """(id, *columns) of those of ``doc_ids`` the index holds: one query per 500."""
        for first in range(0, len(doc_ids), 500):
            part = doc_ids[first : first + 500]
            marks = ",".join("?" * len(part))
            yield from self._db.execute(
                f"SELECT id, {columns} FROM documents WHERE id IN ({marks})", part
            )

    def __len__(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM documents").fetchone()[0])

    def ids(self) -> list[int]:
        return [r[0] for r in self._db.execute("SELECT id FROM documents")]

    def items(self) -> Iterator[tuple[int, Record]]:
        """Every record, read a batch at a time (never all in memory at once)."""
        cursor = self._db.execute("SELECT id, record FROM documents")
        while batch := cursor.fetchmany(1000):
            for doc_id, text in batch:
                yield doc_id, json.loads(text)

    # --- a folder's documents (``folder_listing``), by the folder index -----------
    # A folder is (type, subtype, classification), "" for a level it does not have.

    def names_after(
        self, folder: Folder, after: tuple[str, int] | None, limit: int
    ) -> list[tuple[int, str]]:
        """(id, name) of the folder's documents after (name, id) ``after`` (None: from
        the first), by name then id: a seek in ``folder_names``, whatever the position."""
        if after is None:
            return self._db.execute(
                f"SELECT id, name FROM documents WHERE {_IN_FOLDER} ORDER BY name, id LIMIT ?",
                (*folder, limit),
            ).fetchall()
        return self._db.execute(
            f"SELECT id, name FROM documents WHERE {_IN_FOLDER} AND (name, id) > (?, ?)"
            " ORDER BY name, id LIMIT ?",
            (*folder, *after, limit),
        ).fetchall()

    def named(self, folder: Folder, name: str) -> list[int]:
        """The ids of the folder's documents named ``name``, smallest first."""
        return [
            r[0]
            for r in self._db.execute(
                f"SELECT id FROM documents WHERE {_IN_FOLDER} AND name = ? ORDER BY id",
                (*folder, name),
            )
        ]

    def long_names(self, folder: Folder, longer_than: int) -> list[tuple[int, str]]:
        """(id, name) of the folder's documents whose names are longer than
        ``longer_than`` characters (a name cut to fit a file name is one of them)."""
        return self._db.execute(
            f"SELECT id, name FROM documents WHERE {_IN_FOLDER} AND length(name) > ?",
            (*folder, longer_than),
        ).fetchall()

    def place(self, doc_id: int) -> tuple[Folder, str] | None:
        """The folder ``doc_id`` sits in and its name (None: not in the index)."""
        row = self._db.execute(
            "SELECT type, subtype, classification, name FROM documents WHERE id = ?", (doc_id,)
        ).fetchone()
        return None if row is None else ((row[0], row[1], row[2]), row[3])

    def ids_below(self, labels: tuple[str, ...]) -> list[int]:
        """The ids of the documents in a folder or in any folder below it: ``labels``
        is (type,), (type, subtype) or (type, subtype, classification), () for every
        document; a seek in the folder index by its first columns."""
        columns = ("type", "subtype", "classification")[: len(labels)]
        where = " AND ".join(f"{column} = ?" for column in columns) or "1"
        return [
            r[0]
            for r in self._db.execute(f"SELECT id FROM documents WHERE {where} ORDER BY id", labels)
        ]

    def count_in(self, folder: Folder) -> int:
        (count,) = self._db.execute(
            f"SELECT count(*) FROM documents WHERE {_IN_FOLDER}", folder
        ).fetchone()
        return int(count)

    def stamps(self) -> Iterator[tuple[int, str | None]]:
        """(id, version_modified_date__v) of every document, without the records."""
        for doc_id, modified in self._db.execute("SELECT id, modified FROM documents"):
            yield doc_id, modified or None

    def folders(self) -> Iterator[tuple[str, str, str, str]]:
        """(type, subtype, classification, latest modification) of every folder that
        holds documents: a few seeks in the folder index per folder, whatever the number
        of documents."""
        after = self._next_folder(None)
        while after is not None:
            (latest,) = self._db.execute(
                "SELECT max(modified) FROM documents"
                " WHERE type = ? AND subtype = ? AND classification = ?",
                after,
            ).fetchone()
            yield (*after, str(latest or ""))
            after = self._next_folder(after)

    def _next_folder(self, after: tuple[str, str, str] | None) -> tuple[str, str, str] | None:
        """The folder after ``after`` (the first one for None) in the folder index's
        order. SQLite seeks a row value ``(type, subtype, classification) > (?, ?, ?)``
        by its first column only and then walks every row of ``after``'s type (10 ms at
        100,000 documents in one folder): the next classification, the next subtype and
        the next type are each one seek."""
        order = " ORDER BY type, subtype, classification LIMIT 1"
        steps: list[tuple[str, tuple[str, ...]]]
        if after is None:
            steps = [("", ())]
        else:
            type_, subtype, _ = after
            steps = [
                (" WHERE type = ? AND subtype = ? AND classification > ?", after),
                (" WHERE type = ? AND subtype > ?", (type_, subtype)),
                (" WHERE type > ?", (type_,)),
            ]
        for where, args in steps:
            row = self._db.execute(
                "SELECT type, subtype, classification FROM documents" + where + order, args
            ).fetchone()
            if row is not None:
                return (str(row[0]), str(row[1]), str(row[2]))
        return None

    def put_many(
        self,
        records: Iterable[Record],
        gone: Iterable[int] = (),
        *,
        build: int = 0,
        meta: dict[str, str] | None = None,
    ) -> None:
        """Write ``records``, drop ``gone`` and set ``meta``, all in one transaction:
        a kill at any moment leaves all of it or none."""
        rows = [_row(r, build) for r in records]
        with _transaction(self._db):
            self._db.executemany(
                "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
            )
            self._db.executemany("DELETE FROM documents WHERE id = ?", [(i,) for i in gone])
            if meta:
                self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())

    def finish_build(self, build: int, meta: dict[str, str]) -> list[int]:
        """End build ``build``: what it did not see leaves; returns the ids that left."""
        with _transaction(self._db):
            gone = [
                r[0]
                for r in self._db.execute("SELECT id FROM documents WHERE build != ?", (build,))
            ]
            self._db.execute("DELETE FROM documents WHERE build != ?", (build,))
            self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())
        return gone


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any error."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


#: the documents whose times are read with one asked for (``Records.times``)
_TIMES_AHEAD = 128
#: the documents whose records are read with one asked for (``Records.read_ahead``)
_RECORDS_AHEAD = 64
#: of what is read with one asked for, the share of documents before it in its folder
#: (the rest from it on): a program may walk a folder's documents either way. GNOME
#: Files counts the items of a folder's sub-folders partly from the last up; read from
#: the one asked on only, each of those asks missed (12 % of the record asks, 6 % of
#: the times asks, opening a folder of 100,000 documents). A quarter before turns a
#: backward walk's miss per ask into one per quarter window, for a quarter less ahead.
_BEFORE_SHARE = 4


class _RecentTimes:
    """Documents' times read lately, at most about ``size``: two plain dicts, the
    newer filled until it holds half, then made the older (the older dropped). A
    listing's attributes ask for the times of every entry: an LRU cache of
    ``cachetools`` does a Python-level bookkeeping step per read and per write, 9 % of
    the daemon's time in `ls -l` of 100,000 documents; dicts do it in C. What is read
    again from the older is kept as new."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._new: dict[int, Times] = {}
        self._old: dict[int, Times] = {}

    def get(self, doc_id: int) -> Times | None:
        times = self._new.get(doc_id)
        if times is None:
            times = self._old.get(doc_id)
            if times is not None:
                self[doc_id] = times
        return times

    def __contains__(self, doc_id: int) -> bool:
        return doc_id in self._new or doc_id in self._old

    def __setitem__(self, doc_id: int, times: Times) -> None:
        self._new[doc_id] = times
        if len(self._new) >= self.size // 2:
            self._old, self._new = self._new, {}

    def pop(self, doc_id: int) -> None:
        self._new.pop(doc_id, None)
        self._old.pop(doc_id, None)


class Records(Mapping[int, Record]):
    """The index's records as a read-only mapping: read from the store, the most
    recently used kept in memory (bounded, like the content cache); and each document's
    times alone (``times``), which a listing's attributes need of many documents."""

    def __init__(self, store: IndexStore, size: int = 4096, times: int = 8192) -> None:
        """``size`` records and ``times`` documents' times kept in memory: times are read
        128 at a time in a folder's order (``times_from``), and a listing's page needs
        512; more held 24 MiB at 65,536 and spared no query."""
        self._store = store
        self._cache: LRUCache[int, Record] = LRUCache(maxsize=size)
        #: records read ahead with one asked for, as stored (parsed when asked for)
        self._ahead: LRUCache[int, str] = LRUCache(maxsize=4 * _RECORDS_AHEAD)
        self._times = _RecentTimes(times)
        self._count: int | None = None

    def __getitem__(self, doc_id: int) -> Record:
        record = self.get(doc_id)
        if record is None:
            raise KeyError(doc_id)
        return record

    def get(self, doc_id: int, default: Any = None) -> Any:
        record = self._cache.get(doc_id)
        if record is None:
            text = self._ahead.pop(doc_id, None)
            record = self._store.get(doc_id) if text is None else json.loads(text)
            if record is None:
                return default
            self._cache[doc_id] = record
        return record

    def read_ahead(self, doc_id: int) -> Record | None:
        """The record of ``doc_id`` (None: not in the index), read with those around
        it in its folder when memory has neither: the tree's nodes ask for a document's
        record as a walk goes into its folder (GNOME Files counting each document
        folder's items, ``find``), in the folder's order or its reverse, and one query
        for many costs what one for each would cost for a few. The index's own
        catch-up asks ``get``: its changes come in no folder's order."""
        if doc_id not in self._cache and doc_id not in self._ahead:
            before = _RECORDS_AHEAD // _BEFORE_SHARE
            for other, text in self._store.texts_from(doc_id, _RECORDS_AHEAD - before, before):
                if other not in self._cache:
                    self._ahead[other] = text
        return self.get(doc_id)

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, int) and self.get(doc_id) is not None

    def __iter__(self) -> Iterator[int]:
        return iter(self._store.ids())

    def __len__(self) -> int:
        if self._count is None:  # a count of every row: once per change, not per status
            self._count = len(self._store)
        return self._count

    def items(self) -> Iterator[tuple[int, Record]]:  # type: ignore[override]
        return self._store.items()

    def values(self) -> Iterator[Record]:  # type: ignore[override]
        return (record for _, record in self._store.items())

    def times(self, doc_id: int) -> Times | None:
        """(modified, version created, document created) of ``doc_id`` in nanoseconds,
        None when the index does not hold it."""
        times = self._times.get(doc_id)
        if times is None:
            # With the documents around it in its folder: a program that looks up a
            # folder's entries one by one (``ls -l`` after ``ls``, GNOME Files) asks
            # for them next, mostly in this order.
            ahead = min(_TIMES_AHEAD, self._times.size // 2)
            before = ahead // _BEFORE_SHARE
            for other, other_times in self._store.times_from(doc_id, ahead - before, before):
                self._times[other] = other_times
                if other == doc_id:
                    times = other_times
        return times

    def times_of(self, doc_ids: list[int]) -> list[Times | None]:
        """``times`` of each of ``doc_ids`` (a page of a listing, whose attributes are
        about to be made), read in a few queries, not one each: a folder's page lists its
        documents in the folder's order, so they are read from the folder index from the
        first missing on, and only what that missed by id (a record's page each)."""
        kept = self._times
        missing = [d for d in doc_ids if d not in kept][: kept.size // 2]
        if missing:
            for doc_id, times in self._store.times_from(missing[0], len(missing)):
                kept[doc_id] = times
            for doc_id, times in self._store.times([d for d in missing if d not in kept]):
                kept[doc_id] = times
        get = kept.get
        return [get(d) for d in doc_ids]

    def forget(self, doc_ids: Iterable[int]) -> None:
        """Drop what memory holds of ``doc_ids`` (they changed in the store)."""
        self._count = None
        for doc_id in doc_ids:
            self._cache.pop(doc_id, None)
            self._ahead.pop(doc_id, None)
            self._times.pop(doc_id)
