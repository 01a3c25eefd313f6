"""Field sets: the spool's fourth kind of job, a ``setfattr`` of a field kept until the
vault has it.

Owns ``<spool>/fields/``: one record per field of a document (or of one of its
versions) whose new value the vault does not have yet. A set is recorded (fsynced)
before it is sent and tried at once, inside the setfattr: the vault takes it (the
record goes, the document is read again, setfattr returns 0) or refuses it (the
record goes, setfattr fails with the vault's errno, nothing is kept). A failure that
may pass (``queue.may_pass``: the vault away, overloaded, out of budget) leaves it a
job of the spool's one queue (its kind ``field``), retried with the one backoff
however long the vault is away, also after a restart; setfattr then returns 0 (the
value is safe on this machine, as a save's content is once close() returned), and
until the vault has it ``getfattr`` shows the value waiting (``shown``). A later set
of the same field replaces the value waiting (the vault is sent the last one). A set
the vault refuses from the queue, when no setfattr can be told any more, is kept in
lost+found (the value, and why), as a refused save is.

A field set is a PUT of the field's value: sending one again is harmless, so a set
has no state beyond waiting.

```
<spool>/fields/<n>.json   doc_id, major and minor (null: the latest), field, value
```
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import trio

from vaultfs import durable, errors
from vaultfs.bridge.write.spool import lost
from vaultfs.bridge.write.spool.queue import JobKind, WorkQueue, describe, may_pass, pending_row
from vaultfs.client import VaultApi

__all__ = ["FieldSet", "FieldSetRecord", "FieldSets"]

log = logging.getLogger(__name__)

#: the directory in the spool
FIELDS = "fields"

#: Told of every document whose field the vault took (its id, and whether a version
#: other than the latest was set), whoever sent it, so the tree shows it at once.
Applied = Callable[[int, bool], Awaitable[None]]

#: (doc_id, (major, minor) or None for the latest, field): what one set replaces
Key = tuple[int, tuple[int, int] | None, str]


@dataclass
class FieldSetRecord:
    """One field's value waiting for the vault (the ``<n>.json``)."""

    number: int
    doc_id: int
    field: str
    #: the form's text of the value; None: the field is cleared
    value: str | None
    #: the version set; None: the latest (the document's endpoint)
    major: int | None = None
    minor: int | None = None
    attempts: int = 0
    last_error: str | None = None
    created: float = 0.0

    @property
    def version(self) -> tuple[int, int] | None:
        return None if self.major is None or self.minor is None else (self.major, self.minor)

    @property
    def key(self) -> Key:
        return (self.doc_id, self.version, self.field)


@dataclass(eq=False)
class FieldSet:
    """A field set in the queue: its record and what the queue knows of it."""

    record: FieldSetRecord
    lock: trio.Lock = field(default_factory=trio.Lock)
    next_attempt: float = 0.0
    failures: int = 0

    def waits(self) -> bool:
        """Always: it waits until the vault has the value."""
        return True


def _path(directory: Path, number: int) -> Path:
    return directory / f"{number}.json"


def _write(directory: Path, record: FieldSetRecord) -> None:
    durable.ensure_private_dir(directory)
    durable.write_json_atomically(_path(directory, record.number), asdict(record))


def _remove(directory: Path, number: int) -> None:
    _path(directory, number).unlink(missing_ok=True)
    durable.fsync_dir(directory)


def _scan(directory: Path) -> list[FieldSetRecord]:
    """The sets an earlier daemon left; a record that cannot be used is set aside
    (renamed ``.unreadable``) with an error in the log, never stopping the start."""
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.iterdir()):
        if path.name.endswith(".json.tmp"):
            path.unlink()
            continue
        if path.suffix != ".json":
            continue
        try:
            data: Any = json.loads(path.read_bytes())
            record = FieldSetRecord(**durable.checked_fields(FieldSetRecord, data))
            if record.number != durable.number_named(path):
                raise ValueError(f"number {record.number} in the record of {path.stem}")
        except (OSError, ValueError, TypeError, RecursionError) as exc:
            log.error("spool: unreadable field set %s set aside: %s", path.name, exc)
            with contextlib.suppress(OSError):
                path.rename(path.with_suffix(".unreadable"))
            continue
        found.append(record)
    return found


def _keep_value(spool_dir: Path, record: FieldSetRecord, why: dict[str, Any]) -> Path:
    """The value of a set the vault refused, as a file in lost+found. Blocking."""
    directory = spool_dir / FIELDS
    value = directory / f"{record.number}.value"
    value.write_text("" if record.value is None else record.value)
    return lost.keep_in_lost(spool_dir, value, str(record.doc_id), f"{record.field}.txt", why)


class FieldSets:
    """The field sets of one spool; the spool's queue tries what waits."""

    def __init__(
        self,
        spool_dir: Path,
        client: VaultApi,
        *,
        queue: WorkQueue,
        on_applied: Applied | None = None,
    ) -> None:
        self.spool_dir = spool_dir
        self.directory = spool_dir / FIELDS
        self.client = client
        self._on_applied = on_applied
        self._queue = queue
        queue.kinds[JobKind.FIELD] = self._attempt
        self._jobs: dict[Key, FieldSet] = {}
        records = _scan(self.directory)
        for record in records:
            log.info("spool: %s of doc %d waits for the vault", record.field, record.doc_id)
            self._add(FieldSet(record))
        self._next = max((r.number for r in records), default=0) + 1

    def _add(self, job: FieldSet) -> None:
        self._jobs[job.record.key] = job
        self._queue.add(JobKind.FIELD, job.record.key, job)

    # --- queries -----------------------------------------------------------------

    def shown(
        self, doc_id: int, version: tuple[int, int] | None, record: dict[str, Any]
    ) -> dict[str, Any]:
        """``record`` (the fields of ``doc_id``'s ``version``, None: the latest) with the
        values waiting for the vault in place of its own."""
        if not self._jobs:
            return record
        waiting = {
            job.record.field: job.record.value
            for job in self._jobs.values()
            if job.record.doc_id == doc_id and job.record.version == version
        }
        if not waiting:
            return record
        # A field cleared shows empty, as the vault's null does once it has it.
        return {**record, **waiting}

    def pending(self) -> list[dict[str, Any]]:
        """The sets waiting, for the status (``filename``: the attribute's name)."""
        return [
            pending_row(
                r.doc_id, f"user.vault.{r.field}", "pending", r.created, r.attempts, r.last_error
            )
            for r in sorted((job.record for job in self._jobs.values()), key=lambda r: r.created)
        ]

    # --- a setfattr ----------------------------------------------------------------

    async def set(
        self, doc_id: int, version: tuple[int, int] | None, name: str, value: str | None
    ) -> None:
        """Set field ``name`` of ``doc_id`` (of ``version``; None: the latest) to
        ``value`` (None: cleared): recorded, then tried at once. Returns once the vault
        has it, or once it waits in the queue for a failure that may pass; raises the
        vault's refusal (nothing is kept then)."""
        key: Key = (doc_id, version, name)
        while True:
            job = self._jobs.get(key)
            fresh = job is None
            if job is None:
                major, minor = version if version is not None else (None, None)
                record = FieldSetRecord(self._next, doc_id, name, value, major, minor)
                self._next += 1
                job = FieldSet(record, next_attempt=math.inf)  # this set tries it first
                self._add(job)
            async with job.lock:
                if self._jobs.get(key) is not job:
                    continue  # the vault took the earlier value meanwhile: a set anew
                # A value waiting already was accepted: a failure of this set keeps it.
                earlier = (job.record.value, job.record.created)
                job.record.value, job.record.created = value, time.time()
                job.failures = 0
                try:
                    try:
                        await self._save(job)
                    except OSError:  # nothing of this set recorded: nothing is sent
                        await self._undo(job, fresh, earlier, saved=False)
                        raise
                    await self._try(job)
                except errors.VaultError as exc:
                    if not may_pass(exc):
                        await self._undo(job, fresh, earlier, saved=True)
                        raise
                    self._failed(job, exc)
                    await self._save(job)
                    log.warning("doc %d: %s waits for the vault (%s)", doc_id, name, describe(exc))
                    return
                except BaseException:
                    if self._jobs.get(key) is job and job.next_attempt == math.inf:
                        job.next_attempt = 0.0  # recorded, not sent: the queue's now
                        self._queue.notify()
                    raise
                await self._forget(job)
            await self._applied(job)
            return

    async def _undo(
        self, job: FieldSet, fresh: bool, earlier: tuple[str | None, float], *, saved: bool
    ) -> None:
        """A set that failed leaves what was there before it: nothing (``fresh``), or the
        value that waited already, recorded again when this one was (``saved``)."""
        if fresh:
            await self._forget(job)
            return
        job.record.value, job.record.created = earlier
        if saved:
            await self._save(job)
        self._queue.notify()

    # --- sending -----------------------------------------------------------------

    async def _try(self, job: FieldSet) -> None:
        """One PUT of the value (its lock held)."""
        record = job.record
        record.attempts += 1
        fields = {record.field: record.value}
        if record.version is None:
            await self.client.update_document(record.doc_id, fields)
        else:
            major, minor = record.version
            await self.client.update_version(record.doc_id, major, minor, fields)
        log.info("document %d: %s set", record.doc_id, record.field)

    async def _attempt(self, job: FieldSet) -> None:
        """The queue's try of a set."""
        async with job.lock:
            if self._jobs.get(job.record.key) is not job:
                return  # sent meanwhile
            try:
                await self._try(job)
            except errors.VaultError as exc:
                if may_pass(exc):
                    self._failed(job, exc)
                    await self._save(job)
                else:
                    await self._to_lost_and_found(job, exc)
                raise
            await self._forget(job)
        await self._applied(job)

    def _failed(self, job: FieldSet, exc: errors.VaultError) -> None:
        record = job.record
        record.last_error = describe(exc)
        self._queue.failed(job, exc, f"{record.field} of doc {record.doc_id}")

    async def _applied(self, job: FieldSet) -> None:
        if self._on_applied is None:
            return
        try:
            await self._on_applied(job.record.doc_id, job.record.version is not None)
        except (errors.VaultError, OSError) as exc:  # shown at the next poll instead
            log.warning("reading doc %d after a field set failed: %s", job.record.doc_id, exc)

    async def _to_lost_and_found(self, job: FieldSet, exc: errors.VaultError) -> None:
        record = job.record
        record.last_error = describe(exc)
        why = {**asdict(record), "error_type": exc.type, "error_message": exc.message}
        why.update(filename=f"user.vault.{record.field}", lost=time.time())
        with trio.CancelScope(shield=True):  # disk and memory must agree afterwards
            target = await trio.to_thread.run_sync(_keep_value, self.spool_dir, record, why)
        await self._forget(job)
        log.error(
            "doc %d: the vault refused %s (%s); the value is kept in %s",
            record.doc_id, record.field, record.last_error, target,
        )  # fmt: skip

    async def _save(self, job: FieldSet) -> None:
        with trio.CancelScope(shield=True):  # what the user gave: record it whole
            await trio.to_thread.run_sync(_write, self.directory, job.record)
        self._queue.notify()

    async def _forget(self, job: FieldSet) -> None:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(_remove, self.directory, job.record.number)
        key = job.record.key
        if self._jobs.get(key) is job:
            del self._jobs[key]
        self._queue.remove(JobKind.FIELD, key, job)
