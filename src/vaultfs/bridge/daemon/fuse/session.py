"""The FUSE session of a mount: its options, ``init`` (which empties what an earlier
mount of this process had the kernel keep), the loop (``main``, with the read-ahead
raised once the kernel answers for the mount), ``terminate`` and ``close``."""

from __future__ import annotations

import logging
import os

import pyfuse3
import trio

from vaultfs.bridge.daemon.fuse.kernel_cache import (
    kept,
    kept_opens,
    shared_entries,
    stop_notifier,
)
from vaultfs.bridge.daemon.fuse.operations import FuseOps
from vaultfs.bridge.daemon.readahead import raise_read_ahead

__all__ = ["close", "default_options", "init", "main", "terminate"]

log = logging.getLogger(__name__)

_mountpoint: str | None = None


def init(ops: FuseOps, mountpoint: str, options: set[str]) -> None:
    log.info("pyfuse3 %s, kernel cache features: %s", pyfuse3.__version__, ops.using.describe())
    global _mountpoint
    kept.clear()
    kept_opens.clear()
    if shared_entries is not None:
        shared_entries.clear()
    _mountpoint = mountpoint
    pyfuse3.init(ops, mountpoint, options)


async def main() -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_after_init)
        await pyfuse3.main()
        nursery.cancel_scope.cancel()


async def _after_init() -> None:
    """Once the kernel answers for the mount (INIT is done): the read-ahead."""
    if _mountpoint is None or os.geteuid() != 0:
        return
    await trio.to_thread.run_sync(os.stat, _mountpoint, abandon_on_cancel=True)
    raise_read_ahead(_mountpoint)


def terminate() -> None:
    pyfuse3.terminate()


def close(*, unmount: bool) -> None:
    stop_notifier()  # before the session it writes to goes
    pyfuse3.close(unmount=unmount)


def default_options() -> set[str]:
    return set(pyfuse3.default_options)
