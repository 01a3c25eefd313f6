"""The daemon's side of its signals: sync now, stop after a bounded flush, stop now.

- ``SIGUSR1`` (``FLUSH_SIGNAL``): try every pending upload now, and look for the
  vault's changes now (``vaultfs flush``, ``vaultfs refresh``);
- ``SIGTERM`` (also ``SIGINT``, ``SIGHUP``): flush pending uploads (bounded), unmount;
  offline, unmount at once (pending uploads stay in the spool for the next mount);
- ``SIGUSR2`` (``STOP_NOW_SIGNAL``): unmount now; pending uploads stay in the spool for
  the next mount. A second stop signal cuts a stop's wait short as well.

The commands' side (finding the daemon, sending these) is ``commands.control``.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from vaultfs.bridge.daemon.notify import notify
from vaultfs.bridge.write.spool.states import EntryState

if TYPE_CHECKING:
    from vaultfs.bridge.write.spool.spool import Spool

__all__ = ["FLUSH_SIGNAL", "STOP_NOW_SIGNAL", "STOP_SIGNAL", "on_signals"]

log = logging.getLogger(__name__)

FLUSH_SIGNAL = signal.SIGUSR1
STOP_SIGNAL = signal.SIGTERM
STOP_NOW_SIGNAL = signal.SIGUSR2
#: how long a stop signal waits for pending check-ins before the unmount goes ahead
_FLUSH_TIMEOUT = 30.0
#: how often the service manager hears the pending count while a stop waits
_STOP_PROGRESS_INTERVAL = 2.0


async def on_signals(
    spool: Spool | None,
    flush_asked: Callable[[], None],
    nursery: trio.Nursery,
    terminate: Callable[[], None],
) -> None:
    """Flush on SIGUSR1 (``flush_asked``: a poll, and the dropped files taken without
    their grace, for ``vaultfs flush`` and ``umount``); stop on the others. A stop
    waits for pending check-ins (bounded); SIGUSR2, or a second stop signal, cuts that
    wait short; ``terminate`` ends the FUSE main loop."""
    stop_signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, STOP_NOW_SIGNAL)
    waiting: trio.CancelScope | None = None
    with trio.open_signal_receiver(FLUSH_SIGNAL, *stop_signals) as signals:
        async for signum in signals:
            name = signal.Signals(signum).name
            if signum == FLUSH_SIGNAL:
                flush_asked()
                if spool is not None:
                    log.info("signal %s: uploading pending check-ins now", name)
                    nursery.start_soon(spool.flush_now)
            elif waiting is not None:
                log.info("signal %s: unmounting without waiting longer", name)
                waiting.cancel()
            else:
                waiting = trio.CancelScope()
                if signum == STOP_NOW_SIGNAL or spool is None:
                    waiting.cancel()
                nursery.start_soon(_stop, spool, waiting, name, nursery, terminate)


async def _stop(
    spool: Spool | None,
    waiting: trio.CancelScope,
    signame: str,
    nursery: trio.Nursery,
    terminate: Callable[[], None],
) -> None:
    """Upload pending check-ins now and wait for them (within ``waiting``, at most
    ``_FLUSH_TIMEOUT``), then end the FUSE main loop."""
    if spool is not None and not spool.client.reach.online:
        waiting.cancel()  # offline: nothing would go in; the spool keeps it all
    now = waiting.cancel_called
    log.info("signal %s: unmounting%s", signame, "" if now else " once pending uploads are in")
    notify("STOPPING=1")
    if spool is not None:
        if not now:
            # Backoffs may be minutes long: a stop is the moment to try everything again.
            nursery.start_soon(spool.flush_now)
        with waiting:
            await _wait_flushed(spool)
        left = spool.pending()
        if left:
            log.warning(
                "unmounting with %d check-in(s) not in the vault, kept in the spool for the "
                "next mount: %s",
                len(left),
                ", ".join(f"doc {e['doc_id'] or '(new)'} {e['filename']}" for e in left),
            )
    terminate()


async def _wait_flushed(spool: Spool) -> None:
    """Wait up to ``_FLUSH_TIMEOUT`` for the spool to drain, telling systemd the count."""
    deadline = trio.current_time() + _FLUSH_TIMEOUT
    while trio.current_time() < deadline:
        left = [e for e in spool.pending() if e["state"] != EntryState.EDITING]
        if not left:
            return
        notify(f"STATUS=flushing {len(left)} pending upload(s) before unmounting")
        if await spool.wait_idle(min(_STOP_PROGRESS_INTERVAL, deadline - trio.current_time())):
            return
