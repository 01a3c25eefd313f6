"""The spool's worker and its waits.

``SpoolWorker.run`` replays what was found on disk, releases stale locks, replays
unfinished creates, keeps the session alive during edits and runs the uploads' worker;
``flush_now`` tries every waiting entry at once and ``wait_idle`` waits until nothing
waits for check-in.
"""

from __future__ import annotations

import logging
import math

import trio

from vaultfs.bridge.write.spool import creates
from vaultfs.bridge.write.spool.bookkeeping import SpoolBookkeeping
from vaultfs.bridge.write.spool.checkin import SpoolCheckIn
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
        check_in: SpoolCheckIn,
        *,
        keepalive_interval: float,
    ) -> None:
        self._books = books
        self._check_in = check_in
        self._keepalive_interval = keepalive_interval

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Replay what was found on disk, retry failed check-ins, keep the session
        alive during edits. Runs until cancelled."""
        books = self._books
        async with trio.open_nursery() as nursery:
            books.nursery = nursery
            try:
                for entry in list(books.entries.values()):
                    self._check_in.schedule(entry)
                nursery.start_soon(books.leases.release_stale)
                nursery.start_soon(creates.replay, books.directory, books.client, books.keep_lost)
                nursery.start_soon(self._keep_alive)
                if books.uploads is not None:
                    nursery.start_soon(books.uploads.run)
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
        """Try every entry waiting for check-in now (failures stay pending)."""
        async with trio.open_nursery() as nursery:
            if self._books.uploads is not None:
                nursery.start_soon(self._books.uploads.flush_now)
            for entry in list(self._books.entries.values()):
                if entry.state != EDITING:
                    nursery.start_soon(self._check_in.attempt_quietly, entry)

    async def wait_idle(self, timeout: float | None) -> bool:  # noqa: ASYNC109 - the core's API
        """Wait until nothing waits for check-in; False when ``timeout`` ran out first."""
        with trio.move_on_after(math.inf if timeout is None else timeout):
            while self._busy():
                await self._books.changed.wait_since(self._books.changed.count)
            return True
        return False

    def _busy(self) -> bool:
        uploads = self._books.uploads
        uploading = uploads is not None and uploads.busy()
        return uploading or any(e.state != EDITING for e in self._books.entries.values())
