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

An entry's record and files, and the layout of ``<spool>/uploads/``, are
``upload_files``'; the record type and its targets are imported from there.

Every entry is a job of the spool's one queue (``queue``: its kind ``upload``), which
tries it, retries it with the one backoff and flushes it; this module says what a try
does. An entry is never ``editing``: it is made when the file is closed, whole. It is
``pending`` (nothing sent, or the vault said it did nothing) or ``uploading`` (sent,
outcome unknown). Sending one again is harmless either way: the vault ignores an
attachment with the name and checksum of its latest version, a rendition PUT is
idempotent, and a rendition POST refused as existing is sent again as a PUT.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import trio

from vaultfs.bridge.write.spool import durable, lost, upload_files
from vaultfs.bridge.write.spool.failures import NOT_PROCESSED, PERMANENT, describe
from vaultfs.bridge.write.spool.queue import JobKind, WorkQueue
from vaultfs.bridge.write.spool.states import UploadState
from vaultfs.bridge.write.spool.upload_files import ATTACHMENT, RENDITION, UploadRecord
from vaultfs.client import VaultApi
from vaultfs.errors import (
    InvalidData,
    MalformedUrl,
    VaultError,
)

__all__ = ["ATTACHMENT", "RENDITION", "Upload", "UploadRecord", "Uploads"]

log = logging.getLogger(__name__)

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
        self.directory = spool_dir / upload_files.UPLOADS
        self.client = client
        self._on_uploaded = on_uploaded
        #: the spool's one queue of work: every entry is an upload in it
        self._queue = queue
        queue.kinds[JobKind.UPLOAD] = self._attempt
        self._entries: dict[int, Upload] = {}
        durable.ensure_private_dir(spool_dir)
        durable.ensure_private_dir(self.directory)
        records, unusable = upload_files.scan(self.directory)
        lost.set_all_aside(spool_dir, unusable)
        for record in records:
            log.info(
                "uploads: %s of doc %d found %s; sending it again",
                record.where(),
                record.doc_id,
                record.state,
            )
            self._add(Upload(record, upload_files.data_path(self.directory, record.number)))
        self._next = max(self._entries, default=0) + 1

    def _add(self, entry: Upload) -> None:
        self._entries[entry.record.number] = entry
        self._queue.add(JobKind.UPLOAD, entry.record.number, entry)

    def _drop(self, entry: Upload) -> None:
        self._entries.pop(entry.record.number, None)
        self._queue.remove(JobKind.UPLOAD, entry.record.number, entry)

    # --- queries -----------------------------------------------------------------

    def pending(self) -> list[dict[str, Any]]:
        now = time.time()
        return [
            {
                "doc_id": e.record.doc_id,
                "filename": e.record.where(),
                "state": e.record.state.value,
                "age_seconds": round(max(0.0, now - e.record.created), 3),
                "attempts": e.record.attempts,
                "last_error": e.record.last_error,
            }
            for e in sorted(self._entries.values(), key=lambda e: e.record.created)
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
            await trio.to_thread.run_sync(upload_files.create, self.directory, record, source)
        # The worker leaves it alone until the first try is over (or was cancelled).
        entry = Upload(
            record, upload_files.data_path(self.directory, record.number), next_attempt=math.inf
        )
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
            await trio.to_thread.run_sync(upload_files.remove, self.directory, record.number)
        self._drop(entry)
        log.error(
            "uploads: %s of doc %d refused (%s); content kept in %s",
            record.where(),
            record.doc_id,
            record.last_error,
            target,
        )

    async def _save(self, entry: Upload) -> None:
        await trio.to_thread.run_sync(upload_files.write_record, self.directory, entry.record)
        self._queue.notify()

    async def _forget(self, entry: Upload) -> None:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(upload_files.remove, self.directory, entry.record.number)
        self._drop(entry)
