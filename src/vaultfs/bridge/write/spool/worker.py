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
from vaultfs.bridge.write.spool.checkin import SpoolCheckIn
from vaultfs.bridge.write.spool.entry import EDITING
from vaultfs.bridge.write.spool.failures import describe
from vaultfs.errors import VaultError

__all__ = ["SpoolWorker"]

log = logging.getLogger(__name__)


class SpoolWorker(SpoolCheckIn):
    """The background worker of a spool. ``run`` must be started for retries."""

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Replay what was found on disk, retry failed check-ins, keep the session
        alive during edits. Runs until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                for entry in list(self._entries.values()):
                    self._schedule(entry)
                nursery.start_soon(self._release_stale_locks)
                nursery.start_soon(creates.replay, self.directory, self.client, self.keep_lost)
                nursery.start_soon(self._keep_alive)
                if self.uploads is not None:
                    nursery.start_soon(self.uploads.run)
                task_status.started()
                await trio.sleep_forever()
            finally:
                self._nursery = None

    async def _keep_alive(self) -> None:
        while True:
            await trio.sleep(self._keepalive_interval)
            if any(e.state == EDITING for e in self._entries.values()):
                try:
                    await self.client.keep_alive()
                except VaultError as exc:
                    log.warning("spool: keep-alive failed: %s", describe(exc))

    async def flush_now(self) -> None:
        """Try every entry waiting for check-in now (failures stay pending)."""
        async with trio.open_nursery() as nursery:
            if self.uploads is not None:
                nursery.start_soon(self.uploads.flush_now)
            for entry in list(self._entries.values()):
                if entry.state != EDITING:
                    nursery.start_soon(self._attempt_quietly, entry)

    async def wait_idle(self, timeout: float | None) -> bool:  # noqa: ASYNC109 - the core's API
        """Wait until nothing waits for check-in; False when ``timeout`` ran out first."""
        with trio.move_on_after(math.inf if timeout is None else timeout):
            while True:
                changed = self._changed
                if not self._busy():
                    return True
                await changed.wait()
        return False

    def _busy(self) -> bool:
        uploading = self.uploads is not None and self.uploads.busy()
        return uploading or any(e.state != EDITING for e in self._entries.values())
