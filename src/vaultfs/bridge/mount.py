"""Running a mount: builds the layers and runs them in one trio nursery.

Owns the life of a mounted vault: logs in (so a wrong password fails before anything
is mounted), builds the client, index, caches, spool, core and FUSE operations, starts
the background workers (index poller, downloads, spool worker) into one nursery, runs
``pyfuse3.main`` there, and unmounts cleanly on SIGTERM/SIGINT after the spool has had
a chance to check in what is pending. Everything opened is closed through one
AsyncExitStack, also when the mount fails half-way.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from vaultfs.client import Credentials, VaultClient

from . import fuse_ops
from .blobcache import BlobCache
from .core import Core, Options
from .index import DocumentIndex, TypeCatalog
from .tree import Tree

if TYPE_CHECKING:
    from .spool import Spool

__all__ = ["MountConfig", "default_cache_dir", "run_mount"]

log = logging.getLogger(__name__)

#: how long an unmount waits for pending check-ins before it goes ahead
_FLUSH_TIMEOUT = 30.0


def default_cache_dir(url: str, user: str) -> Path:
    """``~/.cache/vaultfs/<hash of url and user>``: one cache per vault and user."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vaultfs"
    return base / hashlib.sha256(f"{url}\0{user}".encode()).hexdigest()[:16]


@dataclass
class MountConfig:
    url: str
    user: str
    password: str = field(repr=False)
    mountpoint: Path
    cache_dir: Path
    cache_size: int = 1 << 30
    poll_interval: float = 30.0
    attr_timeout: float = 1.0
    read_only: bool = False
    allow_other: bool = False
    allow_delete: bool = False
    debug: bool = False


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
        from .spool import Spool as SpoolClass
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
            VaultClient(config.url, Credentials(config.user, config.password))
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
        core.status_extra = lambda: {"pid": os.getpid(), "mountpoint": str(config.mountpoint)}
        fuse_ops.init(fuse_ops.FuseOps(core), str(config.mountpoint), _fuse_options(config))
        stack.callback(fuse_ops.close, unmount=True)
        nursery = await stack.enter_async_context(trio.open_nursery())
        await nursery.start(blobs.run)
        await nursery.start(index.run, config.poll_interval)
        if spool is not None:
            await nursery.start(spool.run)
        nursery.start_soon(_on_signals, spool)
        nursery.start_soon(_announce, config.mountpoint, ready)
        log.info("mounted %s for %s at %s", config.url, config.user, config.mountpoint)
        await fuse_ops.main()
        log.info("unmounting %s", config.mountpoint)
        nursery.cancel_scope.cancel()


async def _announce(mountpoint: Path, ready: Callable[[], None] | None) -> None:
    """Call ``ready`` once the kernel answers for the mount (stat goes through FUSE)."""
    await trio.to_thread.run_sync(os.stat, mountpoint)
    if ready is not None:
        ready()


async def _on_signals(spool: Spool | None) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            log.info("signal %d: flushing and unmounting", signum)
            if spool is not None and not await spool.wait_idle(_FLUSH_TIMEOUT):
                log.warning("unmounting with check-ins still pending (kept in the spool)")
            fuse_ops.terminate()
            return
