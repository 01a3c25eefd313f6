"""Running a mount: builds the layers and runs them in one trio nursery.

Owns the life of a mounted vault: logs in (so a wrong password fails before anything
is mounted), builds the client, index, caches, spool, core and FUSE operations, starts
the background workers (index poller, downloads, spool worker) into one nursery, runs
``pyfuse3.main`` there, and unmounts cleanly on SIGTERM/SIGINT/SIGHUP after the spool
has had a chance to check in what is pending (SIGUSR1 uploads pending work now, SIGUSR2
unmounts without waiting; see ``control``). Tells systemd (``notify``) when the mount
answers and when it stops. Everything opened is closed through one AsyncExitStack,
also when the mount fails half-way.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import trio

from vaultfs.bridge.commands.control import FLUSH_SIGNAL, STOP_NOW_SIGNAL
from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.daemon import fuse_ops
from vaultfs.bridge.daemon.config import MountConfig
from vaultfs.bridge.daemon.notify import notify
from vaultfs.bridge.fs.filesystem import Core, Options
from vaultfs.bridge.tree.index import DocumentIndex, TypeCatalog
from vaultfs.bridge.tree.tree import Tree
from vaultfs.client import Credentials, VaultClient

if TYPE_CHECKING:
    from vaultfs.bridge.write.spool.spool import Spool

__all__ = ["run_mount"]

log = logging.getLogger(__name__)

#: how long a stop signal waits for pending check-ins before the unmount goes ahead
_FLUSH_TIMEOUT = 30.0
#: how often the service manager hears the pending count while a stop waits
_STOP_PROGRESS_INTERVAL = 2.0


def _fuse_options(config: MountConfig) -> set[str]:
    options = fuse_ops.default_options()
    options.discard("default_permissions")
    options |= {"fsname=vaultfs", "subtype=vaultfs", "default_permissions"}
    if config.read_only:
        options.add("ro")
    if config.allow_other:
        options.add("allow_other")
    if config.debug:
        options.add("debug")
    return options


def _make_spool(config: MountConfig, client: VaultClient) -> Spool | None:
    """The write-back spool, or None when this build has none (a read-only bridge)."""
    if config.read_only:
        return None
    try:
        from vaultfs.bridge.write.spool.spool import Spool as SpoolClass
    except ImportError:
        log.info("no write-back spool available: writing is disabled")
        return None
    directory = config.cache_dir / "spool"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return SpoolClass(directory, client, user_id=client.user_id)


async def run_mount(config: MountConfig, ready: Callable[[], None] | None = None) -> None:
    """Mount and serve until unmounted or signalled; ``ready`` is called once the mount
    answers. Raises the login error (or OSError from mounting) before anything is
    mounted."""
    config.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(config.cache_dir, 0o700)
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            VaultClient(
                config.url,
                Credentials(config.user, config.password),
                max_retries=config.retries,
            )
        )
        await client.login()
        index = DocumentIndex(client)
        tree = Tree(client, index, TypeCatalog(client))
        blobs = BlobCache(config.cache_dir / "content", config.cache_size)
        spool = _make_spool(config, client)
        options = Options(
            url=config.url,
            user=config.user,
            read_only=config.read_only,
            allow_delete=config.allow_delete,
            attr_timeout=config.attr_timeout,
        )
        core = Core(tree, blobs, options, spool=spool)
        core.status_extra = lambda: _status_extra(config)
        fuse_ops.init(fuse_ops.FuseOps(core), str(config.mountpoint), _fuse_options(config))
        stack.callback(fuse_ops.close, unmount=True)
        nursery = await stack.enter_async_context(trio.open_nursery())
        await nursery.start(blobs.run)
        await nursery.start(index.run, config.poll_interval)
        if spool is not None:
            await nursery.start(spool.run)
        nursery.start_soon(_on_signals, spool, nursery)
        nursery.start_soon(_announce, config, ready)
        await fuse_ops.main()
        log.info("unmounting %s", config.mountpoint)
        notify("STOPPING=1", f"STATUS=unmounting {config.mountpoint}")
        nursery.cancel_scope.cancel()


def _status_extra(config: MountConfig) -> dict[str, Any]:
    """What the mount adds to ``.vaultfs/status``: who serves it and where it keeps
    its files (the core reports pending uploads and lost+found itself)."""
    return {
        "pid": os.getpid(),
        "mountpoint": str(config.mountpoint),
        "cache_dir": str(config.cache_dir),
    }


async def _announce(config: MountConfig, ready: Callable[[], None] | None) -> None:
    """Report readiness once the kernel answers for the mount (stat goes through FUSE)."""
    await trio.to_thread.run_sync(os.stat, config.mountpoint)
    log.info("mounted %s for %s at %s", config.url, config.user, config.mountpoint)
    notify("READY=1", f"STATUS=mounted {config.url} as {config.user} at {config.mountpoint}")
    if ready is not None:
        ready()


async def _on_signals(spool: Spool | None, nursery: trio.Nursery) -> None:
    """Flush on SIGUSR1; stop on the others. A stop waits for pending check-ins (bounded);
    SIGUSR2, or a second stop signal, cuts that wait short."""
    stop_signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, STOP_NOW_SIGNAL)
    waiting: trio.CancelScope | None = None
    with trio.open_signal_receiver(FLUSH_SIGNAL, *stop_signals) as signals:
        async for signum in signals:
            name = signal.Signals(signum).name
            if signum == FLUSH_SIGNAL:
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
                nursery.start_soon(_stop, spool, waiting, name, nursery)


async def _stop(
    spool: Spool | None, waiting: trio.CancelScope, signame: str, nursery: trio.Nursery
) -> None:
    """Upload pending check-ins now and wait for them (within ``waiting``, at most
    ``_FLUSH_TIMEOUT``), then end the FUSE main loop."""
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
                ", ".join(f"doc {e['doc_id']} {e['filename']}" for e in left),
            )
    fuse_ops.terminate()


async def _wait_flushed(spool: Spool) -> None:
    """Wait up to ``_FLUSH_TIMEOUT`` for the spool to drain, telling systemd the count."""
    deadline = trio.current_time() + _FLUSH_TIMEOUT
    while trio.current_time() < deadline:
        left = [e for e in spool.pending() if e["state"] != "editing"]
        if not left:
            return
        notify(f"STATUS=flushing {len(left)} pending upload(s) before unmounting")
        if await spool.wait_idle(min(_STOP_PROGRESS_INTERVAL, deadline - trio.current_time())):
            return
