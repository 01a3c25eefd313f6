"""The spool's files on disk: entry records and content files.

Owns the layout of the spool directory and the blocking file operations on its
entries (the caller runs the slow ones in a worker thread); the durable-file steps they
are made of are ``durable``'s:

```
<spool>/                      mode 0700
  <doc_id>.data               the content being checked in (mode 0600)
  <doc_id>.json               its record (mode 0600), replaced atomically
  <doc_id>.<n>.gone           content checked in, to be deleted (see ``retire_entry``)
  scratch/<n>                 the mount's scratch files (see ``bridge.scratch``)
  locks/<doc_id>              a lock this client is taking or holds (``write.lease``)
  uploads/<n>.data, <n>.json  renditions and attachments (see ``uploads``)
  lost+found/                 mode 0700
    <doc_id>-<filename>       content that could not be checked in
    <doc_id>-<filename>.json  why (a LostRecord)
  quarantine/                 mode 0700: records a start could not read or use
```

Local files are named by ids and numbers only, never after a vault's or a user's
file name: a vault takes names longer than a local file system does (255 bytes), and
a user's may be any bytes. The name the vault knows a file by is in its record and
travels as data in the upload. lost+found and quarantine are ``lost``'s. A record is
the only thing that makes a content file an entry: it is written after the content
file exists and removed before the content file is, so a crash leaves at worst an
orphan content file, which holds nothing a user wrote (see ``scan``). A record that
cannot be read or used never stops a start: ``scan`` names it ``Unusable`` and the
spool sets it aside (``lost.set_aside``) and loads the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vaultfs.bridge.write.spool.states import ENTRY_MOVES, EntryState
from vaultfs.durable import (
    FILE_MODE,
    checked_fields,
    fsync_dir,
    number_named,
    write_json_atomically,
)

__all__ = [
    "SCRATCH",
    "SCRATCH_XATTR",
    "STATES",
    "EntryRecord",
    "Unusable",
    "create_entry",
    "data_path",
    "discard",
    "md5_of",
    "remove_entry",
    "retire_entry",
    "scan",
    "write_record",
]

log = logging.getLogger(__name__)

SCRATCH = "scratch"
#: on a scratch content file: json {name, new_document}, what a restart needs to
#: rescue it (written by ``write.scratch``)
SCRATCH_XATTR = "user.vaultfs.scratch"

#: what earlier versions named content while uploading it: removed at start
_UPLOAD_SUFFIX = ".upload"
#: the states a record may be in (``states`` names them and their moves)
STATES = frozenset(EntryState)
_GONE_SUFFIX = ".gone"
#: read size of the copy made at check-out
_COPY_CHUNK = 1 << 20


@dataclass
class EntryRecord:
    """What the spool knows about one checked-out document (the ``<id>.json``)."""

    doc_id: int
    filename: str
    #: md5 of the content the vault has as latest version, as far as we know: that
    #: of the check-out, then that of our draft once it is in (None when unknown)
    base_md5: str | None
    #: changed through ``move`` only (on disk: the state's value)
    state: EntryState
    #: an upload was sent and its outcome is unknown: compare checksums before
    #: sending again (kept apart from ``state``, which a reopen resets to editing)
    unconfirmed: bool = False
    #: md5 of the content of that upload, until the entry is reopened for writing (the
    #: file may differ from it after a power loss: it is fsynced during the upload)
    sent_md5: str | None = None
    #: upload tries made so far (the check-in's own try included)
    attempts: int = 0
    #: ``TYPE: message`` of the last failed try
    last_error: str | None = None
    #: why a write to the content failed (ENOSPC, EIO): the content is then not what
    #: the user wrote, and goes to lost+found instead of ever becoming a version
    write_failed: str | None = None
    #: wall-clock times (seconds since the epoch)
    created: float = 0.0
    updated: float = 0.0
    #: the latest version (``M.m``) when the edit started: a check-in finds it still
    #: the latest, or it would replace what the edit did not start from
    base_version: str | None = None
    #: ``base_version`` and ``base_md5`` were read from the vault once the lock was held
    #: (False: taken from the mount's index, which may be a poll behind)
    base_read: bool = True
    #: when the lock was asked for (seconds since the epoch)
    locked_at: float = 0.0

    def __post_init__(self) -> None:
        # a record read from disk names its state by the value
        if not isinstance(self.state, EntryState):
            if self.state not in STATES:
                raise ValueError(f"unknown state {self.state!r}")
            self.state = EntryState(self.state)

    def move(self, state: EntryState) -> None:
        """The one way a record changes state: ``IllegalTransition`` for a move the
        table (``states.ENTRY_MOVES``) does not have."""
        self.state = ENTRY_MOVES.move(self.state, state, what=f"doc {self.doc_id}")

    @classmethod
    def from_json(cls, data: Any) -> EntryRecord:
        """The record ``data`` (a parsed ``<id>.json``) holds; ValueError naming what is
        wrong when it is not one this spool wrote (a field missing or of another type,
        a state it does not know)."""
        return cls(**checked_fields(cls, data))


@dataclass(frozen=True)
class Unusable:
    """A record a start cannot use, to be set aside (``lost.set_aside``)."""

    #: the record file, as found
    record: Path
    #: the content file it names, when there is one
    content: Path | None
    #: what names the entry on disk (a document id, an upload's number)
    label: str
    #: the file name the record gives, when it gives one
    filename: str | None
    reason: str


def data_path(directory: Path, doc_id: int) -> Path:
    return directory / f"{doc_id}.data"


def record_path(directory: Path, doc_id: int) -> Path:
    return directory / f"{doc_id}.json"


def write_record(directory: Path, record: EntryRecord) -> None:
    record.updated = time.time()
    write_json_atomically(record_path(directory, record.doc_id), asdict(record))


def create_entry(
    directory: Path, record: EntryRecord, initial: Path | None
) -> tuple[int, hashlib._Hash]:
    """Create an entry: ``<doc_id>.data`` (0600) as a durable copy of ``initial``
    (None: empty), then its record.

    Returns an fd of the content open for reading and writing, and the md5 state of
    the content (hashed while copying: the check-in needs no second pass over it).
    Blocking: run in a worker thread. On failure nothing is left behind.
    """
    path = data_path(directory, record.doc_id)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        # The mode given to open() is filtered by the umask and ignored for a file
        # that already existed: set it explicitly before any content lands.
        os.fchmod(fd, FILE_MODE)
        md5 = hashlib.md5(usedforsecurity=False)
        if initial is not None:
            _copy_hashing(initial, fd, md5)
        # Replay after a crash uploads whatever this file holds: it must not be a
        # partial copy, so the copy is durable before the record names it.
        os.fsync(fd)
        write_record(directory, record)
    except BaseException:
        os.close(fd)
        remove_entry(directory, record.doc_id)
        raise
    return fd, md5


def _copy_hashing(source: Path, fd: int, md5: hashlib._Hash) -> None:
    """Append ``source`` to ``fd`` and feed it to ``md5``: one read of the content
    does both (a kernel-side copy followed by a hashing pass would read it twice)."""
    buffer = bytearray(_COPY_CHUNK)
    view = memoryview(buffer)
    with open(source, "rb", buffering=0) as f:
        while n := f.readinto(buffer):
            chunk = view[:n]
            md5.update(chunk)
            done = 0
            while done < n:
                done += os.write(fd, chunk[done:])


def md5_of(path: Path) -> str:
    """Hex md5 of a file, read in chunks. Blocking: run in a worker thread."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "md5").hexdigest()


def remove_entry(directory: Path, doc_id: int) -> None:
    """Forget an entry: the record first (it is what makes the content an entry)."""
    for path in (record_path(directory, doc_id), data_path(directory, doc_id)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    fsync_dir(directory)


def retire_entry(directory: Path, doc_id: int) -> Path:
    """Forget an entry at once and return its content under a name of its own
    (``<doc_id>.<n>.gone``) for ``discard`` to delete later.

    Deleting a big file takes a while (the kernel drops its cached pages: ~40 ms for
    200 MiB) and a check-in need not wait for it; the rename frees the entry's names
    for a new check-out of the document meanwhile. ``scan`` deletes what is left.
    """
    with contextlib.suppress(FileNotFoundError):
        record_path(directory, doc_id).unlink()
    gone = directory / f"{doc_id}.{time.time_ns()}{_GONE_SUFFIX}"
    with contextlib.suppress(FileNotFoundError):
        os.rename(data_path(directory, doc_id), gone)
    fsync_dir(directory)
    return gone


def discard(path: Path) -> None:
    path.unlink(missing_ok=True)


def scan(directory: Path) -> tuple[list[EntryRecord], list[Unusable]]:
    """The entries found on disk, and the records that cannot be used; clears
    leftovers of interrupted writes.

    A ``.tmp`` is a record write that never completed (the old record, if any, is
    still there); a ``.gone`` file is the content of an entry checked in. A content
    file without a record is either a check-out that died before its record was
    written (nothing written by a user yet) or a check-in that died between removing
    the record and the content (already in the vault): both are safe to delete. A
    record without content cannot be uploaded and is dropped. A record that cannot be
    read, or names another document than its file name does, is ``Unusable``: its
    content is kept for the caller to set aside.
    """
    records: list[EntryRecord] = []
    unusable: list[Unusable] = []
    for path in sorted(directory.iterdir()):
        if path.name.endswith(_UPLOAD_SUFFIX):
            shutil.rmtree(path, ignore_errors=True)
        elif path.name.endswith((".json.tmp", _GONE_SUFFIX)):
            path.unlink()
        elif path.suffix == ".json" and path.is_file():
            doc_id = _doc_id_of(path)
            content = data_path(directory, doc_id) if doc_id >= 0 else None
            try:
                data = json.loads(path.read_bytes())
            except (OSError, ValueError, RecursionError) as exc:
                unusable.append(Unusable(path, _file_or_none(content), path.stem, None, str(exc)))
                continue
            try:
                record = EntryRecord.from_json(data)
                if record.doc_id != doc_id:
                    raise ValueError(f"doc_id {record.doc_id} in the record of {path.stem}")
            except (ValueError, TypeError) as exc:
                filename = data.get("filename") if isinstance(data, dict) else None
                unusable.append(
                    Unusable(
                        path,
                        _file_or_none(content),
                        path.stem,
                        filename if isinstance(filename, str) else None,
                        str(exc),
                    )
                )
                continue
            if content is None or not content.is_file():
                log.error("spool: doc %d record without content, dropped", record.doc_id)
                path.unlink()
                continue
            records.append(record)
    known = {data_path(directory, r.doc_id) for r in records}
    kept = {bad.content for bad in unusable}
    for path in directory.glob("*.data"):
        if (
            path not in known
            and path not in kept
            and path.is_file()
            and not record_path(directory, _doc_id_of(path)).exists()
        ):
            log.warning("spool: orphan content %s (no record) removed", path.name)
            path.unlink()
    return records, unusable


def _file_or_none(path: Path | None) -> Path | None:
    return path if path is not None and path.is_file() else None


def _doc_id_of(path: Path) -> int:
    """The number a spool file is named by (``12.json``: 12), -1 for any other name."""
    number = number_named(path)
    return -1 if number is None else number
