"""One upload entry on disk: its record (``UploadRecord``) and its files.

Owns the layout of ``<spool>/uploads/`` and the blocking steps on it (run in a worker
thread): making an entry durable (content copied and fsynced, then its record), writing
its record again, removing it, and the scan at start that finds the entries, sets aside
records that cannot be used and deletes content without a record. ``uploads.Uploads``
keeps the entries in memory and sends them.

```
<spool>/uploads/               mode 0700
  <n>.data                     the content, exactly as closed (mode 0600)
  <n>.json                     its record (an ``UploadRecord``), replaced atomically
```

Files are named by number only; the name the vault knows the file by is in the
record and travels as data in the upload (never a local file name: a vault's names
may be longer than a local file system takes).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vaultfs.bridge.write.spool import durable, store
from vaultfs.bridge.write.spool.states import UPLOAD_MOVES, UploadState

__all__ = [
    "ATTACHMENT",
    "RENDITION",
    "UPLOADS",
    "UploadRecord",
    "create",
    "data_path",
    "remove",
    "scan",
    "write_record",
]

log = logging.getLogger(__name__)

RENDITION = "rendition"
ATTACHMENT = "attachment"
#: the directory in the spool
UPLOADS = "uploads"

_COPY_CHUNK = 1 << 20


@dataclass
class UploadRecord:
    """One file to upload (the ``<n>.json``)."""

    number: int
    doc_id: int
    #: ``rendition`` or ``attachment``
    target: str
    #: the name the upload carries (an attachment is known by it in the vault)
    filename: str
    rendition_type: str | None = None
    #: the version a rendition belongs to; None: the latest (the document's endpoint)
    major: int | None = None
    minor: int | None = None
    #: a rendition of this type existed when the file was written: PUT rather than POST
    replace: bool = False
    md5: str = ""
    #: changed through ``move`` only (on disk: the state's value)
    state: UploadState = UPLOAD_MOVES.start
    attempts: int = 0
    last_error: str | None = None
    created: float = 0.0
    updated: float = 0.0

    def __post_init__(self) -> None:
        # a record read from disk names its state by the value
        if not isinstance(self.state, UploadState):
            if self.state not in frozenset(UploadState):
                raise ValueError(f"unknown state {self.state!r}")
            self.state = UploadState(self.state)

    def move(self, state: UploadState) -> None:
        """The one way a record changes state: ``IllegalTransition`` for a move the
        table (``states.UPLOAD_MOVES``) does not have."""
        self.state = UPLOAD_MOVES.move(
            self.state, state, what=f"{self.where()} of doc {self.doc_id}"
        )

    @classmethod
    def from_json(cls, data: Any) -> UploadRecord:
        """The record ``data`` (a parsed ``<n>.json``) holds; ValueError naming what is
        wrong when it is not one this spool wrote."""
        record = cls(**durable.checked_fields(cls, data))
        if record.target not in (RENDITION, ATTACHMENT):
            raise ValueError(f"unknown target {record.target!r}")
        if record.target == RENDITION and record.rendition_type is None:
            raise ValueError("a rendition without its type")
        return record

    def where(self) -> str:
        """The file as the user named it, for the status and the log."""
        if self.target == ATTACHMENT:
            return f"attachments/{self.filename}"
        if self.major is not None:
            return f"versions/{self.major}.{self.minor}/renditions/{self.filename}"
        return f"renditions/{self.filename}"


def record_path(directory: Path, number: int) -> Path:
    return directory / f"{number}.json"


def data_path(directory: Path, number: int) -> Path:
    return directory / f"{number}.data"


def write_record(directory: Path, record: UploadRecord) -> None:
    record.updated = time.time()
    durable.write_json_atomically(record_path(directory, record.number), asdict(record))


def create(directory: Path, record: UploadRecord, source: Path) -> None:
    """Copy ``source`` into ``<n>.data`` (hashing it), fsync it, then write the record:
    a record only ever names whole content. Blocking: run in a worker thread."""
    path = data_path(directory, record.number)
    md5 = hashlib.md5(usedforsecurity=False)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, durable.FILE_MODE)
        try:
            os.fchmod(fd, durable.FILE_MODE)
            with open(source, "rb", buffering=0) as f:
                while chunk := f.read(_COPY_CHUNK):
                    md5.update(chunk)
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        record.md5 = md5.hexdigest()
        write_record(directory, record)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def remove(directory: Path, number: int) -> None:
    """The record first: it is what makes the content an entry."""
    record_path(directory, number).unlink(missing_ok=True)
    data_path(directory, number).unlink(missing_ok=True)
    durable.fsync_dir(directory)


def scan(directory: Path) -> tuple[list[UploadRecord], list[store.Unusable]]:
    """The entries on disk, and the records that cannot be used (their content is
    kept for ``lost.set_aside``); content without a record (a copy that never
    completed: the file it came from was still in the scratch directory) is deleted."""
    records: list[UploadRecord] = []
    unusable: list[store.Unusable] = []
    for path in sorted(directory.iterdir()):
        if path.name.endswith(".upload"):  # what earlier versions sent the content as
            shutil.rmtree(path, ignore_errors=True)
        elif path.name.endswith(".json.tmp"):
            path.unlink()
        elif path.suffix == ".json" and path.is_file():
            number = durable.number_named(path)
            content = data_path(directory, number) if number is not None else None
            content = content if content is not None and content.is_file() else None
            data: Any = None
            try:
                data = json.loads(path.read_bytes())
                record = UploadRecord.from_json(data)
                if record.number != number:
                    raise ValueError(f"number {record.number} in the record of {path.stem}")
            except (OSError, ValueError, TypeError, RecursionError) as exc:
                filename = data.get("filename") if isinstance(data, dict) else None
                name = filename if isinstance(filename, str) else None
                label = f"upload-{path.stem}"
                unusable.append(store.Unusable(path, content, label, name, str(exc)))
                continue
            if content is None:
                log.error("uploads: %s record without content, dropped", path.name)
                path.unlink()
                continue
            records.append(record)
    kept = {bad.content for bad in unusable}
    for path in directory.glob("*.data"):
        number = durable.number_named(path)
        if (
            number is not None
            and path not in kept
            and path.is_file()
            and not record_path(directory, number).exists()
        ):
            log.warning("uploads: orphan content %s (no record) removed", path.name)
            path.unlink()
    return records, unusable
