"""What the mount and the WebDAV front do alike before they serve the core.

Owns the start both fronts share: the private cache directory and its one owner, the
signed-in client (a vault that cannot be reached is said at once, not after minutes of
retries), what the file system is told (``Options``), the spool's settings and the
index file of this vault and user. A vault that cannot be reached at the start, for a
user whose index is kept, starts the core offline (docs/user-guide.md "Offline"): from
the kept index, with who the user is as the last sign-in said (kept in the index
file). Each front then builds the daemon with what only it has (the kernel's caches
and name events, or the WebDAV locks) and serves it.
"""

from __future__ import annotations

import gc
import os
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from vaultfs.bridge.core.build import SpoolSettings
from vaultfs.bridge.core.ownership import owning
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.tree.index_store import IndexStore, index_file_name
from vaultfs.client import Credentials, Reach, VaultClient
from vaultfs.errors import ServerException, VaultUnavailable

__all__ = ["CoreConfig", "CoreStart", "collect_less", "start_core"]

#: the cycle collector's thresholds while serving (Python's: 700, 10, 10)
_COLLECT_THRESHOLDS = (10_000, 10, 10)

#: login tries at start: a vault that is away is said within seconds
_LOGIN_RETRIES = 2


class CoreConfig(Protocol):
    """What both fronts' configurations give (``MountConfig``, ``WebdavConfig``)."""

    url: str
    user: str
    password: str
    cache_dir: Path
    poll_interval: float
    retries: int
    read_only: bool
    allow_delete: bool
    session_source: Any


@dataclass
class CoreStart:
    client: VaultClient
    options: Options
    spool: SpoolSettings | None
    index_store: IndexStore


async def start_core(
    stack: AsyncExitStack,
    config: CoreConfig,
    *,
    shown_at: str,
    owned: Path,
    nonempty: bool,
    index_on_disk: bool = True,
    **options: Any,
) -> CoreStart:
    """Own ``config.cache_dir`` (and ``owned``: the mount point, or the cache directory
    itself) until ``stack`` closes, sign in, and return what the daemon is built from.
    ``shown_at``: where the user finds the tree (the mount point, the front's address);
    ``index_on_disk``: False keeps the index in memory (it names the user and what they
    see: a WebDAV front beyond loopback writes nothing of its users' own);
    ``options``: further ``Options`` of the front (``attr_timeout``)."""
    config.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(config.cache_dir, 0o700)
    stack.enter_context(owning(config.cache_dir, owned, nonempty=nonempty))
    client = await stack.enter_async_context(
        VaultClient(
            config.url,
            config.session_source or Credentials(config.user, config.password),
            max_retries=config.retries,
        )
    )
    # One index file per vault and user, named by both and holding both.
    store = IndexStore(
        config.cache_dir / "index" / index_file_name(config.url, config.user)
        if index_on_disk
        else None,
        vault_url=config.url,
        user=config.user,
    )
    stack.callback(store.close)
    kept = _Identity.kept(store)
    try:
        # With a kept index, one try: the vault away starts the mount offline at once,
        # and a probe a second later finds a vault that was only slow.
        await client.login(max_retries=0 if kept is not None else _LOGIN_RETRIES)
    except (VaultUnavailable, ServerException) as exc:
        if not isinstance(exc, VaultUnavailable) and exc.http_status not in _PROXY_FAULTS:
            raise
        if kept is None:
            raise VaultUnavailable(
                f"{exc} (and this cache keeps no index of {config.user} at {config.url} "
                "to start offline from: the first mount needs the vault)"
            ) from exc
        client.reach.move(Reach.OFFLINE, str(exc))
        identity = kept
    else:
        identity = _Identity(
            client.user_id,
            config.read_only or await client.may_create_documents(),
        )
        identity.keep(store)
    settings = Options(
        url=config.url,
        mountpoint=shown_at,
        user=config.user,
        read_only=config.read_only,
        # Modes tell the truth: a user who may not create gets no write bits on
        # folders, and a new file there is refused at create(), not at close().
        may_create=identity.may_create,
        allow_delete=config.allow_delete,
        poll_interval=config.poll_interval,
        **options,
    )
    spool = None
    if not config.read_only:  # the write-back spool makes its private directory
        spool = SpoolSettings(config.cache_dir / "spool", user_id=identity.user_id)
    return CoreStart(client, settings, spool, store)


#: what a proxy answers for a vault behind it that is away
_PROXY_FAULTS = frozenset({502, 503, 504})


@dataclass(frozen=True)
class _Identity:
    """Who the user is as the vault's last sign-in said, kept in the index file: an
    offline start needs it (a lock of this user is this client's own; modes)."""

    user_id: int | None
    may_create: bool

    @classmethod
    def kept(cls, store: IndexStore) -> _Identity | None:
        """The identity kept with a complete index (None: none, no offline start)."""
        if store.path is None or store.meta("complete") != "1":
            return None
        user_id, may_create = store.meta("user_id"), store.meta("may_create")
        if user_id is None or may_create is None:
            return None
        return cls(int(user_id) if user_id.isdigit() else None, may_create == "1")

    def keep(self, store: IndexStore) -> None:
        if store.path is not None:
            store.set_meta("user_id", str(self.user_id or ""))
            store.set_meta("may_create", "1" if self.may_create else "0")


def collect_less() -> None:
    """Have the cycle collector run less often while the core serves.

    Building an index or answering a big folder makes and keeps hundreds of thousands
    of small objects (records, entries, attributes, names); at Python's thresholds
    the collector ran after every 700 of them and walked the whole heap every few
    tens of thousands: 2.3 s of a first mount's 24 s index build of 100,000 documents
    and 0.35 s of `ls -l` of that folder, against 0.15 s and 0.12 s now. The cost is
    memory: a reference cycle (trio's tasks and errors make them) waits up to 10,000
    allocations for its collection (about 12 MiB more at that peak, measured).
    Measured in docs/benchmarks.md, 2026-12-07 22:18 UTC."""
    gc.set_threshold(*_COLLECT_THRESHOLDS)
