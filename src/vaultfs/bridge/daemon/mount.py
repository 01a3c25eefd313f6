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
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import trio

from vaultfs.bridge.core.build import build_daemon
from vaultfs.bridge.core.start import collect_less, start_core
from vaultfs.bridge.daemon import fuse
from vaultfs.bridge.daemon.config import MountConfig
from vaultfs.bridge.daemon.name_events import NameEvents
from vaultfs.bridge.daemon.notifications import run_notifications
from vaultfs.bridge.daemon.notify import notify
from vaultfs.bridge.daemon.signals import on_signals
from vaultfs.bridge.write.lease import Reason

__all__ = ["run_mount"]

log = logging.getLogger(__name__)

#: how long an unmount waits for the vault to end editors' check-outs (seconds)
_LET_GO_WAIT = 10.0


def _fuse_options(config: MountConfig) -> set[str]:
    options = fuse.default_options()
    options.discard("default_permissions")
    # df and mount(8) name the vault (commas would split the option list)
    fsname = config.url.replace(",", "%2C")
    options |= {f"fsname={fsname}", "subtype=vaultfs", "default_permissions"}
    if config.read_only:
        options.add("ro")
    if config.allow_other:
        options.add("allow_other")
    if config.debug:
        options.add("debug")
    return options


async def run_mount(config: MountConfig, ready: Callable[[], None] | None = None) -> None:
    """Mount and serve until unmounted or signalled; ``ready`` is called once the mount
    answers. Raises the login error (or OSError from mounting) before anything is
    mounted."""
    async with AsyncExitStack() as stack:
        core = await start_core(
            stack,
            config,
            shown_at=str(config.mountpoint.absolute()),
            owned=config.mountpoint,
            nonempty=config.nonempty,
            attr_timeout=config.attr_timeout,
            max_inodes=config.max_inodes,
            walk_calls=config.walk_calls,
            walk_burst=config.walk_burst,
        )
        client, options = core.client, core.options
        events = NameEvents(str(config.mountpoint.absolute()), fuse.forget_entry, fuse.delete_entry)
        daemon = build_daemon(
            client,
            options,
            content_dir=config.cache_dir / "content",
            cache_size=config.cache_size,
            spool=core.spool,
            status_extra=lambda: _status_extra(config),
            invalidate_attr=fuse.invalidate_attr,
            invalidate_entry=fuse.invalidate_entry,
            invalidate_link=fuse.invalidate_link,
            name_events=events,
            index_store=core.index_store,
        )
        filesystem = daemon.filesystem
        ops = fuse.FuseOps(filesystem, events=events)
        fuse.init(ops, str(config.mountpoint), _fuse_options(config))
        await ops.share_entries()
        collect_less()
        stack.callback(fuse.close, unmount=True)
        stack.callback(events.close)
        nursery = await stack.enter_async_context(trio.open_nursery())
        await nursery.start(daemon.blobs.run)
        await nursery.start(daemon.pins.run)
        await nursery.start(filesystem.freshness.run)
        await nursery.start(daemon.index.run, config.poll_interval)
        nursery.start_soon(client.keep_reaching)
        if daemon.spool is not None:
            await nursery.start(daemon.spool.run)
        if config.notify:
            await nursery.start(run_notifications, filesystem.report.document)
        drops = daemon.drops
        await nursery.start(daemon.new_documents.run)

        def flush_asked() -> None:
            daemon.index.poll_now()
            if drops is not None:
                drops.due_now()

        nursery.start_soon(on_signals, daemon.spool, flush_asked, nursery, fuse.terminate)
        nursery.start_soon(_announce, config, ready)
        await fuse.main()
        log.info("unmounting %s", config.mountpoint)
        notify("STOPPING=1", f"STATUS=unmounting {config.mountpoint}")
        if daemon.spool is not None:
            # Editors' lock files go with the mount: their check-outs end now (one the
            # vault cannot be told of keeps its mark for the next start).
            with trio.move_on_after(_LET_GO_WAIT):
                await daemon.spool.leases.end_all(Reason.EDITOR)
        nursery.cancel_scope.cancel()


def _status_extra(config: MountConfig) -> dict[str, Any]:
    """What the mount adds to ``.vaultfs/status``: who serves it and where it keeps
    its files (the core reports pending uploads and lost+found itself)."""
    return {
        "pid": os.getpid(),
        "mountpoint": str(config.mountpoint),
        "cache_dir": str(config.cache_dir),
        "fuse_requests": fuse.request_counts(),
        "refusals": fuse.recent_refusals(),
    }


async def _announce(config: MountConfig, ready: Callable[[], None] | None) -> None:
    """Report readiness once the kernel answers for the mount (stat goes through FUSE)."""
    await trio.to_thread.run_sync(os.stat, config.mountpoint)
    log.info("mounted %s for %s at %s", config.url, config.user, config.mountpoint)
    notify("READY=1", f"STATUS=mounted {config.url} as {config.user} at {config.mountpoint}")
    if ready is not None:
        ready()
