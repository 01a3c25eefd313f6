"""The spool's one queue of work: every durable job, tried, retried and flushed in one
place.

A job is a save's check-in (a ``SpoolEntry``), an upload of a rendition or an
attachment (an ``Upload``) or a new document's create (a ``Create``); each keeps its
own record on disk, and carries its kind, which says what a try of it does
(``WorkQueue.kinds``: the check-in's ``attempt``, the upload's, the create's). The
queue owns *when*: a job is tried once it waits for the queue (a save
still open for writing does not) and its backoff is over, by one loop, a few at a time;
all at once on ``flush_now``; waited for by ``wait_idle``. A failure that may pass is
counted and its next try scheduled by ``failed``, the one backoff path (the check-ins'
policy, equal jitter, longer when the vault says when to come back). What a start finds
on disk is due at once: the replay is the loop's first turn. rclone's
``vfs/vfscache/writeback`` is the pattern: one queue whose items carry what to do.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import math
import random
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from vaultfs.bridge.tree.locks import Changes
from vaultfs.bridge.write.spool.failures import Retried, describe, schedule_retry
from vaultfs.client import RetryPolicy
from vaultfs.errors import VaultError

__all__ = ["Job", "JobKind", "WorkQueue"]

log = logging.getLogger(__name__)

#: Jobs tried at once in the background (a check-in by close() does not wait for these).
_BACKGROUND = 4


class JobKind(enum.StrEnum):
    """What a job of the queue is."""

    CHECK_IN = "check-in"
    UPLOAD = "upload"
    CREATE = "create"


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

    def __init__(self, retry: RetryPolicy) -> None:
        self.retry = retry
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

    async def flush_now(self) -> None:
        """Try every job that waits now (failures stay for the loop)."""
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
