"""The spool's second kind of entry: a file written into a document's ``renditions/``
or ``attachments/``, kept on disk until the vault has it.

Owns ``<spool>/uploads/``: one entry per file closed there, made durable (content
copied, fsynced, then its record) before anything is sent, uploaded once
(``POST``/``PUT .../renditions/{type}`` or ``POST .../attachments``), retried with
the spool's backoff while the vault is away, moved to lost+found when the vault
refuses it for good, and replayed by the next start after a crash. ``spool.Spool``
holds it (status); what a name in the tree
means is ``write.files_in``'s. The behaviour is described for users in
docs/writing.md ("Uploads").

An entry's record (``UploadRecord``) and its files, and the blocking steps on them (run
in a worker thread: made durable, its record written again, removed, and the scan at
start that sets aside records that cannot be used and deletes content without one):

```
<spool>/uploads/               mode 0700
  <n>.data                     the content, exactly as closed (mode 0600)
  <n>.json                     its record (an ``UploadRecord``), replaced atomically
```

Files are named by number only; the name the vault knows the file by is in the
record and travels as data in the upload (never a local file name: a vault's names
may be longer than a local file system takes).

Every entry is a job of the spool's one queue (``queue``: its kind ``upload``), which
tries it, retries it with the one backoff and flushes it; this module says what a try
does. An entry is never ``editing``: it is made when the file is closed, whole. It is
``pending`` (nothing sent, or the vault said it did nothing) or ``uploading`` (sent,
outcome unknown). Sending one again is harmless either way: the vault ignores an
attachment with the name and checksum of its latest version, a rendition PUT is
idempotent, and a rendition POST refused as existing is sent again as a PUT.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import trio

from vaultfs import durable
from vaultfs.bridge.write.spool import lost, store
from vaultfs.bridge.write.spool.queue import (
    NOT_PROCESSED,
    PERMANENT,
    JobKind,
    WorkQueue,
    describe,
    pending_row,
)
from vaultfs.bridge.write.spool.states import UPLOAD_MOVES, UploadState
from vaultfs.client import VaultApi
from vaultfs.errors import (
    InvalidData,
    MalformedUrl,
    VaultError,
)

__all__ = ["ATTACHMENT", "RENDITION", "UPLOADS", "Upload", "UploadRecord", "Uploads"]

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


def _record_path(directory: Path, number: int) -> Path:
    return directory / f"{number}.json"


def _data_path(directory: Path, number: int) -> Path:
    return directory / f"{number}.data"


def _write_record(directory: Path, record: UploadRecord) -> None:
    record.updated = time.time()
    durable.write_json_atomically(_record_path(directory, record.number), asdict(record))


def _create(directory: Path, record: UploadRecord, source: Path) -> None:
    """Copy ``source`` into ``<n>.data`` (hashing it), fsync it, then write the record:
    a record only ever names whole content. Blocking: run in a worker thread."""
    path = _data_path(directory, record.number)
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
        _write_record(directory, record)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def _remove(directory: Path, number: int) -> None:
    """The record first: it is what makes the content an entry."""
    _record_path(directory, number).unlink(missing_ok=True)
    _data_path(directory, number).unlink(missing_ok=True)
    durable.fsync_dir(directory)


def _scan(directory: Path) -> tuple[list[UploadRecord], list[store.Unusable]]:
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
            content = _data_path(directory, number) if number is not None else None
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
            and not _record_path(directory, number).exists()
        ):
            log.warning("uploads: orphan content %s (no record) removed", path.name)
            path.unlink()
    return records, unusable


#: Background uploads at once.
_BACKGROUND = 4


@dataclass(eq=False)
class Upload:
    """An entry in memory: its record and what the queue knows of it."""

    record: UploadRecord
    path: Path
    lock: trio.Lock = field(default_factory=trio.Lock)
    next_attempt: float = 0.0
    failures: int = 0

    def waits(self) -> bool:
        """Always: made whole at close(), it waits until the vault has it."""
        return True


#: Told of every upload the vault took (its record), whoever sent it, so the tree
#: shows it at once.
Uploaded = Callable[[UploadRecord], Awaitable[None]]


class Uploads:
    """The upload entries of one spool; ``run`` (started by the spool's) retries."""

    def __init__(
        self,
        spool_dir: Path,
        client: VaultApi,
        *,
        queue: WorkQueue,
        on_uploaded: Uploaded | None = None,
    ) -> None:
        self.spool_dir = spool_dir
        self.directory = spool_dir / UPLOADS
        self.client = client
        self._on_uploaded = on_uploaded
        #: the spool's one queue of work: every entry is an upload in it
        self._queue = queue
        queue.kinds[JobKind.UPLOAD] = self._attempt
        self._entries: dict[int, Upload] = {}
        durable.ensure_private_dir(spool_dir)
        durable.ensure_private_dir(self.directory)
        records, unusable = _scan(self.directory)
        lost.set_all_aside(spool_dir, unusable)
        for record in records:
            log.info(
                "uploads: %s of doc %d found %s; sending it again",
                record.where(),
                record.doc_id,
                record.state,
            )
            self._add(Upload(record, _data_path(self.directory, record.number)))
        self._next = max(self._entries, default=0) + 1

    def _add(self, entry: Upload) -> None:
        self._entries[entry.record.number] = entry
        self._queue.add(JobKind.UPLOAD, entry.record.number, entry)

    def _drop(self, entry: Upload) -> None:
        self._entries.pop(entry.record.number, None)
        self._queue.remove(JobKind.UPLOAD, entry.record.number, entry)

    # --- queries -----------------------------------------------------------------

    def pending(self) -> list[dict[str, Any]]:
        return [
            pending_row(r.doc_id, r.where(), r.state.value, r.created, r.attempts, r.last_error)
            for r in sorted((e.record for e in self._entries.values()), key=lambda r: r.created)
        ]

    # --- taking a file -----------------------------------------------------------

    async def spool(
        self, source: Path, record: UploadRecord, *, unless_md5: str | None = None
    ) -> Upload | None:
        """Make ``source`` a durable entry (``record`` without number and md5); ``send``
        uploads it. None when its md5 is ``unless_md5`` (what the vault has already:
        an attachment's latest version): nothing to send. A failure leaves nothing."""
        record.number, self._next = self._next, self._next + 1
        record.created = time.time()
        with trio.CancelScope(shield=True):  # the copy is the user's content: finish it
            await trio.to_thread.run_sync(_create, self.directory, record, source)
        # The worker leaves it alone until the first try is over (or was cancelled).
        entry = Upload(record, _data_path(self.directory, record.number), next_attempt=math.inf)
        self._add(entry)
        log.info("uploads: %s of doc %d spooled (%s)", record.where(), record.doc_id, record.md5)
        if unless_md5 is not None and record.md5 == unless_md5:
            log.info("uploads: %s of doc %d unchanged; nothing sent", record.where(), record.doc_id)
            await self._forget(entry)
            return None
        return entry

    async def send(self, entry: Upload) -> None:
        """Upload a spooled entry; returns once the vault has it. Raises the failure
        otherwise: one that may pass leaves the entry for the worker, any other has
        moved the content to lost+found."""
        try:
            await self._attempt(entry)
        finally:
            if entry.next_attempt == math.inf:
                entry.next_attempt = 0.0
                self._queue.notify()

    # --- sending -----------------------------------------------------------------

    async def _attempt(self, entry: Upload) -> None:
        async with entry.lock:
            if self._entries.get(entry.record.number) is not entry:
                return  # sent meanwhile
            record = entry.record
            record.attempts += 1
            record.move(UploadState.UPLOADING)
            await self._save(entry)
            try:
                await self._send(record, entry.path)
            except PERMANENT as exc:
                await self._to_lost_and_found(entry, exc)
                raise
            except (VaultError, OSError) as exc:
                if isinstance(exc, NOT_PROCESSED):
                    record.move(UploadState.PENDING)
                await self._failed(entry, exc)
                raise
            log.info("uploads: %s of doc %d is in the vault", record.where(), record.doc_id)
            await self._forget(entry)
        if self._on_uploaded is not None:
            try:
                await self._on_uploaded(record)
            except (VaultError, OSError) as exc:  # shown at the next poll instead
                log.warning(
                    "uploads: reading doc %d after an upload failed: %s", record.doc_id, exc
                )

    async def _send(self, record: UploadRecord, file: Path) -> None:
        """Upload ``file`` (named by its entry's number) as the record says; the name
        the vault knows it by travels as data (``filename``)."""
        if record.target == ATTACHMENT:
            await self.client.create_attachment(record.doc_id, file, filename=record.filename)
            return
        assert record.rendition_type is not None
        send = self.client.put_rendition
        args = (record.doc_id, record.rendition_type, file, record.major, record.minor)
        name = record.filename
        try:
            await send(*args, replace=record.replace, filename=name)
        except InvalidData:
            if record.replace:
                raise
            # Added by someone else, or by an earlier try of ours whose answer was
            # lost: the user asked for this content, so it replaces that one.
            await send(*args, replace=True, filename=name)
        except MalformedUrl:
            if not record.replace:
                raise
            await send(*args, replace=False, filename=name)  # deleted since: added anew

    async def _failed(self, entry: Upload, exc: BaseException) -> None:
        entry.record.last_error = describe(exc)
        record = entry.record
        self._queue.failed(entry, exc, f"upload of {record.where()} of doc {record.doc_id}")
        try:
            await self._save(entry)
        except OSError as disk:
            log.error("uploads: the failure could not be recorded: %s", disk)

    async def _to_lost_and_found(self, entry: Upload, exc: VaultError) -> None:
        record = entry.record
        record.last_error = describe(exc)
        why = {**asdict(record), "error_type": exc.type, "error_message": exc.message}
        why["lost"] = time.time()
        with trio.CancelScope(shield=True):  # disk and memory must agree afterwards
            target = await trio.to_thread.run_sync(
                lost.keep_in_lost, self.spool_dir, entry.path, str(record.doc_id),
                record.filename, why,
            )  # fmt: skip
            await trio.to_thread.run_sync(_remove, self.directory, record.number)
        self._drop(entry)
        log.error(
            "uploads: %s of doc %d refused (%s); content kept in %s",
            record.where(),
            record.doc_id,
            record.last_error,
            target,
        )

    async def _save(self, entry: Upload) -> None:
        await trio.to_thread.run_sync(_write_record, self.directory, entry.record)
        self._queue.notify()

    async def _forget(self, entry: Upload) -> None:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(_remove, self.directory, entry.record.number)
        self._drop(entry)
