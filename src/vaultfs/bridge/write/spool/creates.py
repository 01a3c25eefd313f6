"""Creates of new documents: the spool's third kind of job, sent exactly once in
effect, however long the vault is away and across a restart.

Owns the create request and its marker (``external_id__v = vaultfs-<uuid>``, a value
only this mount chose) and what makes it durable: before a create is sent, its fields,
file name and a hard link to its content are recorded in ``<spool>/creates/``; the
record goes once the vault has the document, or has refused it for good (the content
then goes to lost+found). Every record is a job of the spool's one queue (``queue``:
its kind ``create``). The last close tries it at once (``Creates.create``: the
``CREATES`` policy's 8 tries); a create the vault is still away for after those stays
in the queue, retried with the one backoff until the vault takes it. A start loads
what an earlier daemon left as jobs due at once: the queue's first turn settles them.

An answer that is lost leaves the job ``sent`` (``states.CreateState``): before it is
sent again its marker is looked for among the latest-changed documents (one call, for
every job sent at once), so a document the vault made is never made twice.

```
<spool>/creates/<marker>.json   fields, file name (mode 0600)
<spool>/creates/<marker>.data   a hard link to the content
```
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from vaultfs import durable, errors
from vaultfs.bridge.tree.index import SORT
from vaultfs.bridge.write.spool import lost
from vaultfs.bridge.write.spool.queue import JobKind, WorkQueue, describe, may_pass, pending_row
from vaultfs.bridge.write.spool.states import CREATE_MOVES, CreateState
from vaultfs.client import CREATES, Attempt, VaultApi, retrying

__all__ = [
    "MARKER_FIELD",
    "Create",
    "Created",
    "Creates",
    "contents_in_flight",
    "new_marker",
]

log = logging.getLogger(__name__)

#: The field a create carries the mount's marker in.
MARKER_FIELD = "external_id__v"
_MARKER_PREFIX = "vaultfs-"
#: The latest-changed documents searched for a marker (one list call).
_RECONCILE_PAGE = 200
_CREATES = "creates"

#: Told of every document a create made (its id; the record when a look for its
#: marker found it), whoever sent it, so the tree shows it at once.
Created = Callable[[int, dict[str, object] | None], Awaitable[None]]


def new_marker() -> str:
    return f"{_MARKER_PREFIX}{uuid.uuid4()}"


def _ambiguous(exc: errors.VaultError) -> bool:
    """Failures after which the create may or may not have happened."""
    return isinstance(
        exc, errors.VaultUnavailable | errors.ServerException | errors.ApiLimitExceeded
    ) or (exc.http_status >= 500)


@dataclass(frozen=True)
class CreateRecord:
    """The durable record of one create (blocking file operations)."""

    directory: Path
    marker: str

    @property
    def meta(self) -> Path:
        return self.directory / _CREATES / f"{self.marker}.json"

    @property
    def content(self) -> Path:
        return self.directory / _CREATES / f"{self.marker}.data"

    @classmethod
    def write(
        cls, directory: Path, fields: dict[str, str], filename: str, content: Path
    ) -> CreateRecord:
        """Record a create before it is sent: ``fields`` carry its marker."""
        record = cls(directory, fields[MARKER_FIELD])
        durable.ensure_private_dir(record.meta.parent)
        with contextlib.suppress(FileNotFoundError):
            record.content.unlink()
        os.link(content, record.content)  # the content is durable: fsync'd at close
        durable.write_json_atomically(
            record.meta, {"fields": fields, "filename": filename, "recorded": time.time()}
        )
        return record

    def drop(self) -> None:
        for path in (self.meta, self.content):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


@dataclass(eq=False)
class Create:
    """A create in the queue: its record, its request, and what the queue knows."""

    record: CreateRecord
    fields: dict[str, str]
    filename: str
    recorded: float
    #: ``sent`` once sent with the answer unknown (a record found at a start always
    #: is): its marker is looked for before it is sent again
    state: CreateState = CreateState.PENDING
    lock: trio.Lock = field(default_factory=trio.Lock)
    next_attempt: float = 0.0
    failures: int = 0
    attempts: int = 0
    last_error: str | None = None

    @property
    def marker(self) -> str:
        return self.record.marker

    def waits(self) -> bool:
        """Always: recorded after the file's last close, it waits until it is made."""
        return True

    def move(self, state: CreateState) -> None:
        """The one way a create changes state (``states.CREATE_MOVES``)."""
        self.state = CREATE_MOVES.move(self.state, state, what=repr(self.filename))


def _load(directory: Path) -> list[Create]:
    """The creates an earlier daemon left (``sent``: they may have been); an unreadable
    record is set aside with an error in the log, never stopping the start."""
    folder = directory / _CREATES
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        record = CreateRecord(directory, path.name.removesuffix(".json"))
        try:
            meta = json.loads(path.read_text())
            fields = {str(k): str(v) for k, v in meta["fields"].items()}
            filename = str(meta["filename"])
            recorded = float(meta.get("recorded") or time.time())
            if fields.get(MARKER_FIELD) != record.marker or not record.content.exists():
                raise ValueError("marker or content missing")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.error("spool: unreadable create record %s set aside: %s", path.name, exc)
            with contextlib.suppress(OSError):
                path.rename(path.with_suffix(".unreadable"))
            continue
        found.append(Create(record, fields, filename, recorded, state=CreateState.SENT))
    return found


class Creates:
    """The create jobs of one spool; the spool's queue tries what waits."""

    def __init__(
        self,
        spool_dir: Path,
        client: VaultApi,
        *,
        queue: WorkQueue,
        on_created: Created | None = None,
    ) -> None:
        self.directory = spool_dir
        self.client = client
        self._on_created = on_created
        self._queue = queue
        queue.kinds[JobKind.CREATE] = self._attempt
        self._jobs: dict[str, Create] = {}
        self._rng = random.Random()
        durable.ensure_private_dir(spool_dir)
        for job in _load(spool_dir):
            log.info("spool: the create of %r was in flight when the daemon stopped", job.filename)
            self._add(job)

    def _add(self, job: Create) -> None:
        self._jobs[job.marker] = job
        self._queue.add(JobKind.CREATE, job.marker, job)

    def pending(self) -> list[dict[str, Any]]:
        """The creates not made yet, for the status (``doc_id`` None: no document yet)."""
        return [
            # sync and the notifications: "creating", not in the vault yet
            pending_row(None, job.filename, "creating", job.recorded, job.attempts, job.last_error)
            for job in sorted(self._jobs.values(), key=lambda job: job.recorded)
        ]

    # --- the last close's create -------------------------------------------------

    async def create(
        self,
        fields: dict[str, str],
        filename: str,
        content: Path,
        on_found: Callable[[dict[str, object]], None] = lambda record: None,
    ) -> int:
        """Create the document (``fields`` without a marker) exactly once: recorded
        first, then tried under the ``CREATES`` policy, its marker looked for before
        each try after an answer that may have been lost. Returns its id. A failure
        that ``may_pass`` leaves it to the queue; any other settles it
        (the caller keeps the content)."""
        fields = {**fields, MARKER_FIELD: new_marker()}
        with trio.CancelScope(shield=True):  # the record and the job agree
            record = await trio.to_thread.run_sync(
                CreateRecord.write, self.directory, fields, filename, content
            )
        job = Create(record, fields, filename, time.time(), next_attempt=math.inf)
        self._add(job)  # left alone by the queue until this try is over
        try:
            async with job.lock:

                async def once(attempt: Attempt) -> int:
                    return await self._send(job, on_found)

                doc_id = await retrying(
                    once, policy=CREATES, rng=self._rng, what=f"create {job.marker}",
                    retryable=_ambiguous,
                )  # fmt: skip
                await self._forget(job)
        except errors.VaultError as exc:
            if not may_pass(exc):
                await self._forget(job)  # refused: the caller keeps the content
                raise
            job.last_error = describe(exc)
            self._queue.failed(job, exc, f"create of {filename!r}")
            log.warning("spool: the create of %r waits in the queue for the vault", filename)
            raise
        finally:
            if job.next_attempt == math.inf:  # cancelled: the record stays, the queue's
                job.next_attempt = 0.0
                self._queue.notify()
        return doc_id

    # --- one try -----------------------------------------------------------------

    async def _send(self, job: Create, on_found: Callable[[dict[str, object]], None]) -> int:
        """One try (the job's lock held): after an answer that may have been lost, the
        marker is looked for first; then the create is sent."""
        job.attempts += 1
        if job.state is CreateState.SENT:
            found = (await self._find({job.marker})).get(job.marker)
            if found is not None:
                log.info("create %s: answer lost, document %s exists", job.marker, found.get("id"))
                on_found(found)
                return int(str(found["id"]))
            log.warning("create %s: not in the vault; sent again", job.marker)
            job.move(CreateState.PENDING)
        job.move(CreateState.SENT)  # until the vault answers
        # The content is named by a marker: the name travels as data.
        return await self.client.create_document(
            job.fields, job.record.content, filename=job.filename
        )

    async def _find(self, markers: set[str]) -> dict[str, dict[str, object]]:
        """The records of the documents carrying ``markers`` among the latest changed
        (one call). A failure to ask is raised: nothing is sent again without a look."""
        page = await self.client.list_documents(limit=_RECONCILE_PAGE, sort=SORT)
        return {
            str(r.get(MARKER_FIELD)): r for r in page.documents if r.get(MARKER_FIELD) in markers
        }

    async def _attempt(self, job: Create) -> None:
        """The queue's try of a create: every job sent is looked for at once (one
        call), then this one is sent unless it was found."""
        async with job.lock:
            if self._jobs.get(job.marker) is not job:
                return  # made meanwhile
            try:
                if job.state is CreateState.SENT:
                    await self._settle_sent(job)
                    if self._jobs.get(job.marker) is not job:
                        return
                    job.move(CreateState.PENDING)  # just looked: not made
                doc_id = await self._send(job, lambda record: None)
            except errors.VaultError as exc:
                job.last_error = describe(exc)
                if may_pass(exc):
                    self._queue.failed(job, exc, f"create of {job.filename!r}")
                else:
                    await self.keep_lost(job.record.content, job.filename, exc)
                    await self._forget(job)
                raise
            log.info("spool: %r created as document %d", job.filename, doc_id)
            await self._made(job, doc_id, None)

    async def _settle_sent(self, trying: Create) -> None:
        """Look for every job sent that nobody is trying (and ``trying``, whose lock is
        held); those the vault has are made."""
        sent = {trying.marker: trying}
        for job in self._jobs.values():
            if job.state is CreateState.SENT and not job.lock.locked():
                sent[job.marker] = job
        found = await self._find(set(sent))
        for marker, record in found.items():
            job = sent[marker]
            if self._jobs.get(marker) is not job or (job is not trying and job.lock.locked()):
                continue
            log.info(
                "spool: %r had been created (document %s); not sent again",
                job.filename, record.get("id"),
            )  # fmt: skip
            await self._made(job, int(str(record["id"])), record)

    async def _made(self, job: Create, doc_id: int, record: dict[str, object] | None) -> None:
        await self._forget(job)
        if self._on_created is None:
            return
        try:
            await self._on_created(doc_id, record)
        except (errors.VaultError, OSError) as exc:  # shown at the next poll instead
            log.warning("spool: reading new document %d failed: %s", doc_id, exc)

    async def _forget(self, job: Create) -> None:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(job.record.drop)
        if self._jobs.get(job.marker) is job:
            del self._jobs[job.marker]
        self._queue.remove(JobKind.CREATE, job.marker, job)

    # --- what the vault will never take ------------------------------------------

    async def keep_lost(self, source: Path, filename: str, exc: errors.VaultError) -> Path:
        """Move a new document's content the vault will not take to lost+found, saying
        why; returns where it went."""
        why = {
            "doc_id": None,
            "filename": filename,
            "error_type": exc.type,
            "error_message": exc.message,
            "lost": time.time(),
        }
        with trio.CancelScope(shield=True):
            target = await trio.to_thread.run_sync(
                lost.keep_in_lost, self.directory, source, "new", filename, why
            )
        log.error("spool: %s could not be created (%s); content kept in %s", filename, exc, target)
        return target


def contents_in_flight(directory: Path) -> set[int]:
    """The inodes of the contents of creates in the queue: a scratch file that is one
    of them is not lost at a restart (the queue makes it)."""
    folder = directory / _CREATES
    if not folder.is_dir():
        return set()
    return {p.stat().st_ino for p in folder.glob("*.data")}
