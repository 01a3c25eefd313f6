"""The spool's one queue of work: every durable job, tried, retried and flushed in one
place.

A job is a save's check-in (a ``SpoolEntry``), an upload of a rendition or an
attachment (an ``Upload``), a new document's create (a ``Create``) or a setfattr of a
field (a ``FieldSet``); each keeps its own record on disk, and carries its kind, which
says what a try of it does (``WorkQueue.kinds``). The
queue owns *when*: a job is tried once it waits for the queue (a save
still open for writing does not) and its backoff is over, by one loop, a few at a time;
all at once on ``flush_now``; waited for by ``wait_idle``. A failure that may pass is
counted and its next try scheduled by ``failed``, the one backoff path (the check-ins'
policy, equal jitter, longer when the vault says when to come back). What a start finds
on disk is due at once: the replay is the loop's first turn. While the vault cannot be
reached (offline) nothing is tried; once it is back, everything is due at once. rclone's
``vfs/vfscache/writeback`` is the pattern: one queue whose items carry what to do.

Also how every job reads a failure, so that all treat the vault's answers alike:
``PERMANENT`` (for good: lost+found), ``NOT_PROCESSED`` (the vault did nothing),
``may_pass`` (what keeps a create or a field set in the queue); ``describe`` for
records and log lines.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from vaultfs.bridge.tree.locks import Changes
from vaultfs.client import Reach, Reachability, RetryPolicy
from vaultfs.errors import (
    ApiLimitExceeded,
    InsufficientAccess,
    InvalidData,
    InvalidDocument,
    InvalidSessionId,
    MalformedUrl,
    MethodNotSupported,
    ParameterRequired,
    ServerException,
    VaultError,
    VaultUnavailable,
)

__all__ = [
    "NOT_PROCESSED",
    "PERMANENT",
    "Job",
    "JobKind",
    "Retried",
    "WorkQueue",
    "describe",
    "may_pass",
    "pending_row",
    "retry_delay",
    "schedule_retry",
]

log = logging.getLogger(__name__)

#: Refusals that retrying cannot cure: the content goes to lost+found.
PERMANENT: tuple[type[VaultError], ...] = (
    InvalidDocument,
    InsufficientAccess,
    InvalidData,
    ParameterRequired,
    MalformedUrl,
    MethodNotSupported,
)
#: Failures of which the vault says the request was not processed at all (the
#: client re-logs in on INVALID_SESSION_ID itself; one that surfaces was refused).
NOT_PROCESSED: tuple[type[VaultError], ...] = (ApiLimitExceeded, InvalidSessionId)


def may_pass(exc: VaultError) -> bool:
    """Whether a job that failed so stays in the queue: the vault away, overloaded or
    out of budget, or a session not renewed, all of which pass by themselves; any
    other answer settles the job (for good: lost+found, or the caller's error)."""
    return isinstance(
        exc, VaultUnavailable | ServerException | ApiLimitExceeded | InvalidSessionId
    ) or (exc.http_status >= 500)


def pending_row(
    doc_id: int | None,
    filename: str,
    state: str,
    created: float,
    attempts: int,
    last_error: str | None,
) -> dict[str, Any]:
    """One job as the status lists it (``pending_uploads``): whatever its kind, the
    same keys."""
    return {
        "doc_id": doc_id,
        "filename": filename,
        "state": state,
        "age_seconds": round(max(0.0, time.time() - created), 3),
        "attempts": attempts,
        "last_error": last_error,
    }


def describe(exc: BaseException) -> str:
    """For records and log lines: the vault's error type (or the exception's class)
    and its message."""
    kind = exc.type if isinstance(exc, VaultError) else type(exc).__name__
    return f"{kind}: {exc}"


def retry_delay(
    exc: BaseException, failures: int, policy: RetryPolicy, rng: random.Random
) -> float:
    """Seconds before the next try after the ``failures``-th failure in a row, ``exc``:
    the policy's wait (the one backoff, or longer when the vault said when to come
    back)."""
    return policy.wait(failures - 1, rng, exc)


class Retried(Protocol):
    """A job the queue tries again: a draft's, an upload's or a create's."""

    failures: int
    #: trio time of the next try
    next_attempt: float


def schedule_retry(
    entry: Retried, exc: BaseException, policy: RetryPolicy, rng: random.Random
) -> float:
    """Count ``exc`` as the entry's next failure in a row and set when it is tried
    again under ``policy`` (``CHECK_INS``, as the mount sets it); returns the delay.
    The worker waits for that time or anything that wakes it (``flush_now``, a
    reopen): a wait no retry loop could be interrupted in."""
    entry.failures += 1
    delay = retry_delay(exc, entry.failures, policy, rng)
    entry.next_attempt = trio.current_time() + delay
    return delay


#: Jobs tried at once in the background (a check-in by close() does not wait for these).
_BACKGROUND = 4


class JobKind(enum.StrEnum):
    """What a job of the queue is."""

    CHECK_IN = "check-in"
    UPLOAD = "upload"
    CREATE = "create"
    FIELD = "field"


class Job(Retried, Protocol):
    """What the queue asks of a job (its retry counters are ``Retried``'s)."""

    #: held while the job is being tried or changed (a close() checking it in): the
    #: loop leaves it alone then, and looks again at its next try once it is let go
    lock: trio.Lock

    def waits(self) -> bool:
        """Whether it waits for the queue (a save open for writing does not)."""
        ...


class WorkQueue:
    """The one queue of a spool's durable jobs. ``run`` must be started for retries."""

    def __init__(self, retry: RetryPolicy, reach: Reachability | None = None) -> None:
        """``reach``: whether the vault can be reached; while it cannot, no job is
        tried, and every job is due once it is back."""
        self.retry = retry
        self._reach = reach
        if reach is not None:
            reach.on_change.append(lambda state: self.due_now() if state == Reach.ONLINE else None)
        self.rng = random.Random()
        #: every change of a job: the loop and ``wait_idle`` listen
        self.changed = Changes()
        #: what a try of each kind of job does (raises its failure, recorded)
        self.kinds: dict[JobKind, Callable[[Any], Awaitable[None]]] = {}
        self._jobs: dict[tuple[JobKind, object], Job] = {}
        self._running: set[tuple[JobKind, object]] = set()

    # --- the jobs --------------------------------------------------------------

    def add(self, kind: JobKind, key: object, job: Job) -> None:
        self._jobs[kind, key] = job
        self.notify()

    def remove(self, kind: JobKind, key: object, job: Job) -> None:
        if self._jobs.get((kind, key)) is job:
            del self._jobs[kind, key]
        self.notify()

    def notify(self) -> None:
        """A job changed (its state, its next try): look again."""
        self.changed.notify()

    def busy(self) -> bool:
        """Whether any job waits for the queue."""
        return any(job.waits() for job in self._jobs.values())

    def failed(self, job: Job, exc: BaseException, what: str) -> float:
        """Count ``exc`` as the job's next failure in a row and schedule its next try
        (the one backoff path); returns the delay."""
        delay = schedule_retry(job, exc, self.retry, self.rng)
        log.warning("spool: %s failed (%s); retry in %.1fs", what, describe(exc), delay)
        self.notify()
        return delay

    # --- trying them -----------------------------------------------------------

    async def _try(self, kind: JobKind, job: Job) -> None:
        with contextlib.suppress(VaultError, OSError):  # recorded and logged by the try
            await self.kinds[kind](job)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Try every job that is due (what a start found on disk at once), until
        cancelled."""
        limiter = trio.CapacityLimiter(_BACKGROUND)

        async def attempt(slot: tuple[JobKind, object], job: Job) -> None:
            kind, _ = slot
            try:
                async with limiter:
                    await self._try(kind, job)
            finally:
                self._running.discard(slot)
                self.notify()

        async with trio.open_nursery() as nursery:
            task_status.started()
            while True:
                if self._reach is not None and not self._reach.online:
                    await self._reach.wait_until(online=True)  # then all is due
                seen = self.changed.count
                now = trio.current_time()
                wake = math.inf
                for key, job in list(self._jobs.items()):
                    if key in self._running or job.lock.locked() or not job.waits():
                        continue
                    if job.next_attempt <= now:
                        self._running.add(key)
                        nursery.start_soon(attempt, key, job)
                    else:
                        wake = min(wake, job.next_attempt)
                with trio.move_on_at(wake):
                    await self.changed.wait_since(seen)

    def due_now(self) -> None:
        """Every job is due now (the vault is back): tried by the loop at once."""
        for job in self._jobs.values():
            job.next_attempt = min(job.next_attempt, 0.0)
        self.notify()

    async def flush_now(self) -> None:
        """Try every job that waits now (failures stay for the loop); offline, none
        (they are all due once the vault is back)."""
        if self._reach is not None and not self._reach.online:
            return
        jobs = [(key, job) for key, job in self._jobs.items() if job.waits()]
        for _, job in jobs:
            job.next_attempt = min(job.next_attempt, 0.0)
        self.notify()
        async with trio.open_nursery() as nursery:
            for (kind, _), job in jobs:
                nursery.start_soon(self._try, kind, job)

    async def wait_idle(self, timeout: float | None) -> bool:  # noqa: ASYNC109 - the core's API
        """Wait until no job waits; False when ``timeout`` ran out first."""
        with trio.move_on_after(math.inf if timeout is None else timeout):
            while self.busy():
                await self.changed.wait_since(self.changed.count)
            return True
        return False
