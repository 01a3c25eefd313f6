"""The spool's files on disk: entry records and content files.

Owns the layout of the spool directory and every blocking file operation of the
spool (the caller runs the slow ones in a worker thread):

```
<spool>/                      mode 0700
  <doc_id>.data               the content being checked in (mode 0600)
  <doc_id>.json               its record (mode 0600), replaced atomically
  <doc_id>.<n>.gone           content checked in, to be deleted (see ``retire_entry``)
  <doc_id>.upload/<filename>  a hard link naming the content as the vault calls the
                              file, while it is being uploaded (a multipart upload
                              sends the file's name)
  scratch/<n>                 the mount's scratch files (see ``bridge.scratch``)
  locks/<doc_id>              a lock this mount is taking or holds (written before the
                              lock is asked for, removed once it is released): what a
                              restart releases when no entry took it over
  lost+found/                 mode 0700
    <doc_id>-<filename>       content that could not be checked in
    <doc_id>-<filename>.json  why (a LostRecord)
```

lost+found is ``lost``'s. A record is the only thing that makes a content file an
entry: it is written after the content file exists and removed before the content
file is, so a crash leaves at worst an orphan content file, which holds nothing a
user wrote (see ``scan``).
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

__all__ = [
    "FILE_MODE",
    "SCRATCH",
    "SCRATCH_XATTR",
    "EntryRecord",
    "create_entry",
    "data_path",
    "discard",
    "drop_lock_mark",
    "drop_upload_name",
    "ensure_private_dir",
    "fsync_dir",
    "lock_marks",
    "mark_lock",
    "md5_of",
    "remove_entry",
    "retire_entry",
    "safe_filename",
    "scan",
    "upload_name",
    "write_json_atomically",
    "write_record",
]

log = logging.getLogger(__name__)

SCRATCH = "scratch"
#: on a scratch content file: json {name, new_document}, what a restart needs to
#: rescue it (written by ``write.scratch``)
SCRATCH_XATTR = "user.vaultfs.scratch"

_DIR_MODE = 0o700
FILE_MODE = 0o600
_UPLOAD_SUFFIX = ".upload"
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
    state: str
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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EntryRecord:
        return cls(
            doc_id=int(data["doc_id"]),
            filename=str(data["filename"]),
            base_md5=data.get("base_md5"),
            state=str(data["state"]),
            unconfirmed=bool(data.get("unconfirmed", False)),
            sent_md5=data.get("sent_md5"),
            attempts=int(data.get("attempts", 0)),
            last_error=data.get("last_error"),
            write_failed=data.get("write_failed"),
            created=float(data.get("created", 0.0)),
            updated=float(data.get("updated", 0.0)),
            base_version=data.get("base_version"),
            base_read=bool(data.get("base_read", True)),
            locked_at=float(data.get("locked_at", 0.0)),
        )


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (mode 0700) or tighten an existing one to 0700."""
    path.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, _DIR_MODE)


def data_path(directory: Path, doc_id: int) -> Path:
    return directory / f"{doc_id}.data"


def record_path(directory: Path, doc_id: int) -> Path:
    return directory / f"{doc_id}.json"


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    """tmp + fsync + rename + fsync(dir): after a crash the file is old or new, whole."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        os.write(fd, json.dumps(data, indent=1, sort_keys=True).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


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


_LOCKS = "locks"


def mark_lock(directory: Path, doc_id: int) -> None:
    """Record, durably, that this mount is about to lock ``doc_id`` (before asking)."""
    folder = directory / _LOCKS
    folder.mkdir(mode=_DIR_MODE, exist_ok=True)
    fd = os.open(folder / str(doc_id), os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(folder)


def drop_lock_mark(directory: Path, doc_id: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        (directory / _LOCKS / str(doc_id)).unlink()


def lock_marks(directory: Path) -> list[int]:
    """The documents this mount asked a lock of and never recorded as released."""
    folder = directory / _LOCKS
    if not folder.is_dir():
        return []
    marks = []
    for path in folder.iterdir():
        if path.name.isdigit():
            marks.append(int(path.name))
        else:
            path.unlink()  # not ours to keep
    return sorted(marks)


def discard(path: Path) -> None:
    path.unlink(missing_ok=True)


def scan(directory: Path) -> list[EntryRecord]:
    """The entries found on disk; clears leftovers of interrupted writes.

    A ``.tmp`` is a record write that never completed (the old record, if any, is
    still there); a ``.gone`` file is the content of an entry checked in. A content
    file without a record is either a check-out that died before its record was
    written (nothing written by a user yet) or a check-in that died between removing
    the record and the content (already in the vault): both are safe to delete. A
    record without content cannot be uploaded and is dropped.
    """
    records: list[EntryRecord] = []
    for path in sorted(directory.iterdir()):
        if path.name.endswith(_UPLOAD_SUFFIX):
            shutil.rmtree(path, ignore_errors=True)
        elif path.name.endswith((".json.tmp", _GONE_SUFFIX)):
            path.unlink()
        elif path.suffix == ".json":
            try:
                record = EntryRecord.from_json(json.loads(path.read_text()))
            except (ValueError, KeyError, TypeError) as exc:
                log.error("spool: unreadable record %s left in place: %s", path, exc)
                continue
            if not data_path(directory, record.doc_id).exists():
                log.error("spool: doc %d record without content, dropped", record.doc_id)
                path.unlink()
                continue
            records.append(record)
    known = {data_path(directory, r.doc_id) for r in records}
    for path in directory.glob("*.data"):
        if path not in known and not record_path(directory, _doc_id_of(path)).exists():
            log.warning("spool: orphan content %s (no record) removed", path.name)
            path.unlink()
    return records


def _doc_id_of(path: Path) -> int:
    try:
        return int(path.stem)
    except ValueError:
        return -1


def safe_filename(filename: str) -> str:
    """``filename`` (from the vault, or typed by a user) as one harmless path component."""
    safe = filename.replace("/", "_").replace("\0", "_")
    return "content" if safe in ("", ".", "..") else safe


def upload_name(source: Path, filename: str) -> Path:
    """A hard link to ``source`` called ``filename``, for an upload that sends the name.

    The link lives in ``<source>.upload/`` next to ``source``; ``drop_upload_name``
    removes it. Blocking, but only a mkdir and a link.
    """
    folder = source.with_name(source.name + _UPLOAD_SUFFIX)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(mode=_DIR_MODE)
    link = folder / safe_filename(filename)
    os.link(source, link)
    return link


def drop_upload_name(source: Path) -> None:
    shutil.rmtree(source.with_name(source.name + _UPLOAD_SUFFIX), ignore_errors=True)
