"""The spool's background work.

``SpoolWorker.run`` runs the queue of the spool's durable jobs (``queue``: check-ins,
uploads and creates, what a start found on disk due at once), releases the locks an
earlier daemon left (``write.lease``) and keeps the session alive during edits;
``flush_now`` and ``wait_idle`` are the queue's.
"""

from __future__ import annotations

import logging

import trio

from vaultfs.bridge.write.spool.bookkeeping import SpoolBookkeeping
from vaultfs.bridge.write.spool.entry import EDITING
from vaultfs.bridge.write.spool.failures import describe
from vaultfs.errors import VaultError

__all__ = ["SpoolWorker"]

log = logging.getLogger(__name__)


class SpoolWorker:
    """The background worker of a spool. ``run`` must be started for retries."""

    def __init__(
        self,
        books: SpoolBookkeeping,
        *,
        keepalive_interval: float,
    ) -> None:
        self._books = books
        self._keepalive_interval = keepalive_interval

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Try what was found on disk, retry what failed, keep the session
        alive during edits. Runs until cancelled."""
        books = self._books
        async with trio.open_nursery() as nursery:
            books.nursery = nursery
            try:
                await nursery.start(books.queue.run)  # what was found on disk: due now
                nursery.start_soon(books.leases.release_stale)
                nursery.start_soon(self._keep_alive)
                task_status.started()
                await trio.sleep_forever()
            finally:
                books.nursery = None

    async def _keep_alive(self) -> None:
        while True:
            await trio.sleep(self._keepalive_interval)
            if any(e.state == EDITING for e in self._books.entries.values()):
                try:
                    await self._books.client.keep_alive()
                except VaultError as exc:
                    log.warning("spool: keep-alive failed: %s", describe(exc))

    async def flush_now(self) -> None:
        """Try every job of the queue now (failures stay pending)."""
        await self._books.queue.flush_now()

    async def wait_idle(self, timeout: float | None) -> bool:  # noqa: ASYNC109 - the core's API
        """Wait until no job waits; False when ``timeout`` ran out first."""
        return await self._books.queue.wait_idle(timeout)
