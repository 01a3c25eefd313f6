"""Calls from the WebDAV front's request threads into the trio core, and their errors.

Owns the one crossing between WsgiDAV (which handles each request in a worker thread
that Hypercorn starts with ``trio.to_thread``) and the core (trio): ``core`` runs a
core coroutine with ``trio.from_thread.run`` and turns the core's errors into the
HTTP status WebDAV answers with, from the errno the mount would report
(``errors.errno_for``, the one table), so both fronts say the same thing. A document
another user holds is 423 Locked, naming the holder.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio
from wsgidav.dav_error import DAVError

from vaultfs import errors

__all__ = ["core", "http_status_of"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_HTTP_OF_ERRNO = {
    errno.ENOENT: 404,
    errno.EACCES: 403,
    errno.EPERM: 403,
    errno.EROFS: 403,
    errno.EBUSY: 423,
    errno.EEXIST: 405,
    errno.ENOTEMPTY: 409,
    errno.EISDIR: 409,
    errno.ENOTDIR: 409,
    errno.EXDEV: 502,
    errno.ENOTSUP: 403,
    errno.ENODATA: 404,
    errno.EINVAL: 400,
    errno.ENAMETOOLONG: 414,
    errno.ENOSPC: 507,
    errno.EDQUOT: 507,
}


def http_status_of(exc: BaseException) -> int:
    """The HTTP status of a core error (503 while the vault cannot be reached)."""
    if isinstance(exc, errors.LockedByOther):
        return 423
    if isinstance(exc, errors.VaultUnavailable):
        return 503
    return _HTTP_OF_ERRNO.get(errors.errno_for(exc), 500)


def core(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``fn(*args)`` in the core's trio loop from a request thread; a core error
    becomes the DAVError of its HTTP status, logged with what was asked."""
    try:
        return trio.from_thread.run(fn, *args)
    except (errors.VaultError, OSError) as exc:
        status = http_status_of(exc)
        level = logging.WARNING if status >= 500 else logging.INFO
        log.log(level, "webdav: %s%r: %s (HTTP %d)", fn.__name__, args[:1], exc, status)
        raise DAVError(status, str(exc)) from exc
