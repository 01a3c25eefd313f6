"""One signed-in user's front: their core, built as for a mount, and WsgiDAV over it.

Owns what a front has for each user it serves: the core started as the mount starts
it (``core.start``: the cache directory and its owner, the signed-in client,
the options, the spool's settings, the index), the daemon built by ``build_daemon``
without a kernel to tell, its workers started in the front's nursery (the spool's
releases what a killed front left checked out), and WsgiDAV's application over the
tree (``resources``) with its locks (``locks``) and their sweep. The loopback front
has one; a front beyond loopback one per WebDAV user (``users``).
"""

from __future__ import annotations

import io
import os
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import trio
from wsgidav.wsgidav_app import WsgiDAVApp
from wsgidav.xml_tools import etree

from vaultfs.bridge.core.build import Daemon, build_daemon
from vaultfs.bridge.core.start import collect_less, start_core
from vaultfs.bridge.fs.by_path import PathFileSystem
from vaultfs.bridge.webdav.config import WebdavConfig
from vaultfs.bridge.webdav.listing import Listings, streamed_listing
from vaultfs.bridge.webdav.locks import VaultLocks
from vaultfs.bridge.webdav.resources import VaultProvider
from vaultfs.bridge.write.scratch import empty_private_dir
from vaultfs.client import VaultClient

__all__ = ["UserFront", "open_front", "wsgi_app"]

#: how long a stop waits for pending check-ins (what is left stays in the spool)
_STOP_WAIT = 30.0

_FINITE_DEPTH = (
    b'<?xml version="1.0" encoding="utf-8"?>\n'
    b'<D:error xmlns:D="DAV:"><D:propfind-finite-depth/></D:error>'
)


def finite_depth(app: Any) -> Any:
    """PROPFIND with ``Depth: infinity`` (or none, which means it) refused, as RFC 4918
    allows (403, propfind-finite-depth): one request would walk the whole vault.
    WsgiDAV serves it and has no setting for it."""

    def refusing(environ: dict[str, Any], start_response: Any) -> Any:
        depth = environ.get("HTTP_DEPTH", "infinity").strip().lower()
        if environ.get("REQUEST_METHOD") == "PROPFIND" and depth not in ("0", "1"):
            start_response(
                "403 Forbidden",
                [
                    ("Content-Type", "application/xml; charset=utf-8"),
                    ("Content-Length", str(len(_FINITE_DEPTH))),
                ],
            )
            return [_FINITE_DEPTH]
        return app(environ, start_response)

    return refusing


#: WsgiDAV 4.4 takes a PROPFIND for property names from ``<name/>``, not RFC 4918's
#: ``<propname/>``: it then answers no property at all (LibreOffice asks for them)
_PROPNAME_AS_WSGIDAV_READS_IT = (
    b'<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:"><D:name/></D:propfind>'
)


def property_names(app: Any) -> Any:
    """A PROPFIND for the property names (``<D:propname/>``) answered with them: handed
    to WsgiDAV in the form it reads (``_PROPNAME_AS_WSGIDAV_READS_IT``). The body is
    whole already, and small (``bodies.XML_LIMIT``)."""

    def asking(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("REQUEST_METHOD") == "PROPFIND" and environ.get("CONTENT_LENGTH"):
            body = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
            if b"propname" in body and _asks_property_names(body):
                body = _PROPNAME_AS_WSGIDAV_READS_IT
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return app(environ, start_response)

    return asking


def _asks_property_names(body: bytes) -> bool:
    try:
        root = etree.fromstring(body)
    except Exception:  # not XML: WsgiDAV answers it (400)
        return False
    return bool(
        root.tag == "{DAV:}propfind" and [child.tag for child in root] == ["{DAV:}propname"]
    )


def wsgi_app(provider: VaultProvider, locks: VaultLocks, listings: Listings) -> Any:
    """WsgiDAV over ``provider``: anonymous to WsgiDAV (who may reach it is settled
    before: loopback, or the sign-in of ``users``), WebDAV locks kept by ``locks``,
    other dead properties in memory; a folder's PROPFIND streamed, and kept in
    ``listings`` (``listing``)."""
    dav = WsgiDAVApp(
        {
            "provider_mapping": {"/": provider},
            "simple_dc": {"user_mapping": {"*": True}},
            "http_authenticator": {"accept_basic": True, "accept_digest": False},
            "lock_storage": locks,
            "property_manager": True,
            "add_header_MS_Author_Via": True,
            "hotfixes": {"emulate_win32_lastmod": True},
            "dir_browser": {"enable": False},
            "logging": {"enable": False},
            "verbose": 0,
            # Each read and write of a body crosses into the core once a block: 1 MiB,
            # not WsgiDAV's 8 KiB (a 64 MiB GET took 5.5 s, now 1 s).
            "block_size": 1 << 20,
        }
    )
    return finite_depth(property_names(streamed_listing(dav, provider, dav.config, listings)))


@dataclass
class UserFront:
    """A user's core and the WsgiDAV application over it."""

    app: Any
    client: VaultClient
    daemon: Daemon
    locks: VaultLocks

    async def stop(self) -> None:
        """Pending check-ins get a last chance; every vault lock of a WebDAV lock goes."""
        spool = self.daemon.spool
        if spool is not None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(spool.flush_now)
                await spool.wait_idle(_STOP_WAIT)
                nursery.cancel_scope.cancel()
        await self.locks.release_all()


async def open_front(
    stack: AsyncExitStack, config: WebdavConfig, nursery: trio.Nursery, *, in_memory: bool
) -> UserFront:
    """The front of ``config.user``, signed in, its workers running in ``nursery``
    until it is cancelled, what it owns given back when ``stack`` closes.
    ``in_memory``: its index kept in memory only (a user of a front beyond loopback)."""
    core = await start_core(
        stack,
        config,
        shown_at=f"{config.scheme}://{config.host}:{config.port}/",
        owned=config.cache_dir,
        nonempty=True,
        index_on_disk=not in_memory,
        walk_calls=config.walk_calls,
        walk_burst=config.walk_burst,
    )
    daemon = build_daemon(
        core.client,
        core.options,
        content_dir=config.cache_dir / "content",
        cache_size=config.cache_size,
        spool=core.spool,
        index_store=core.index_store,
        status_extra=lambda: {"pid": os.getpid(), "webdav": f"{config.host}:{config.port}"},
        # A WebDAV client learns of another's check-out from LOCK (423, the holder
        # named) and never reads LibreOffice's lock files; Explorer would show them.
        lock_files=False,
        # Explorer and Finder copy a file in with a PUT of 0 bytes, a LOCK, the content
        # under the lock and UNLOCK, asking for the name they wrote all along.
        keep_names=True,
    )
    collect_less()
    pfs = PathFileSystem(daemon.filesystem)
    locks = VaultLocks(pfs, daemon.editor_locks)
    spool = daemon.spool
    provider = VaultProvider(pfs, read_only=config.read_only, held_elsewhere=locks.held_elsewhere)
    await nursery.start(daemon.blobs.run)
    await nursery.start(daemon.pins.run)
    await nursery.start(daemon.filesystem.freshness.run)
    await nursery.start(daemon.index.run, config.poll_interval)
    nursery.start_soon(core.client.keep_reaching)
    if spool is not None:
        await nursery.start(spool.run)
    await nursery.start(daemon.new_documents.run)
    await nursery.start(locks.sweep)
    # What the front keeps of its listings goes at any change the core learns of.
    listings = Listings(empty_private_dir(config.cache_dir / "listings"))
    daemon.index.on_change.append(listings.changed)
    daemon.blobs.on_size.append(listings.changed)
    daemon.filesystem.parts.write.new_documents.on_drop_taken.append(listings.changed)
    locks.on_expired.append(listings.changed)
    return UserFront(wsgi_app(provider, locks, listings), core.client, daemon, locks)
