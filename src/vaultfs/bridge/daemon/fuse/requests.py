"""Each FUSE request's bookkeeping: counted by operation (what a walk costs,
``.vaultfs/status``), and its failure translated to the errno the kernel is given.
The refusals of the last minute (EPERM, EACCES, EBUSY, EROFS: what the user may not
do here, and why) are kept for the status, which the desktop notifications read.

``vaultfs.errors`` and ``OSError`` become the errno of ``errors.errno_for``; anything
unexpected is logged with its context and becomes EIO. Nothing but
``pyfuse3.FUSEError`` (and trio's cancellation) escapes. A log line names the path the
user knows, never a node key, and the same failure is logged at most once a minute.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections import Counter, deque
from types import TracebackType
from typing import Any

import pyfuse3

from vaultfs import errors
from vaultfs.bridge.fs.filesystem import FileSystem

__all__ = ["RequestErrors", "count", "recent_refusals", "request_counts"]

log = logging.getLogger(__name__)

#: seconds between two log lines about the same unreachable-vault failure
_REPEAT_LOG_AFTER = 60.0
#: answers a file system gives in ordinary use (a name probed that does not exist, an
#: attribute it does not have), or whose cause is logged once where it is decided (a
#: walk stopped past its share: ``tree.walks``, hundreds of thousands of listings):
#: not worth a log line each
_ORDINARY = frozenset(
    {
        errno.ENOENT,
        errno.ENODATA,
        errno.ENOTSUP,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EEXIST,
        errno.EDQUOT,
    }
)

#: requests that reached Python, by operation: what a walk costs (``.vaultfs/status``)
_requests: Counter[str] = Counter()
#: answers that refuse what the user asked, and how long the status shows them
_REFUSALS = frozenset({errno.EPERM, errno.EACCES, errno.EBUSY, errno.EROFS})
_REFUSAL_SHOWN = 60.0
_refusals: deque[dict[str, Any]] = deque(maxlen=20)


def count(op: str) -> None:
    """One more request of ``op`` reached the mount's Python code."""
    _requests[op] += 1


def recent_refusals() -> list[dict[str, Any]]:
    """The refusals of the last minute, oldest first: operation, path, why."""
    now = time.time()
    return [r for r in _refusals if now - r["at"] < _REFUSAL_SHOWN]


def request_counts() -> dict[str, int]:
    """The requests that reached the mount's Python code so far, by operation (a
    getxattr answered inside pyfuse3 is not one)."""
    return dict(_requests)


class RequestErrors:
    """The error translation of one mount's operations."""

    def __init__(self, core: FileSystem) -> None:
        self.core = core
        self._logged: dict[tuple[str, Any], float] = {}
        #: open file handle -> its inode, so that a log line about a read, a write or a
        #: close names the file
        self.fh_inodes: dict[int, int] = {}

    def handling(
        self,
        op: str,
        ino: int | None = None,
        name: bytes | None = None,
        *,
        fh: int | None = None,
        attribute: bytes | None = None,
    ) -> _Handling:
        """``ino`` (with ``name`` for an operation on a name in a directory), or the
        open file ``fh``, says what a log line is about; ``attribute``: an xattr's name."""
        return _Handling(self, op, ino, name, fh, attribute)

    def translate(
        self,
        exc: Exception,
        op: str,
        ino: int | None,
        name: bytes | None,
        fh: int | None,
        attribute: bytes | None,
    ) -> pyfuse3.FUSEError:
        """The errno the kernel is given for ``exc``, logged with its context (the
        path is made only for a log line or the status: an ordinary answer, a name
        that is not there, is given hundreds of thousands of times in a walk)."""
        if not isinstance(exc, errors.VaultError | OSError):
            what = self._what(ino, name, fh, attribute)
            log.error("%s(%s) failed unexpectedly", op, what, exc_info=exc)
            return pyfuse3.FUSEError(errno.EIO)
        number = errors.errno_for(exc)
        if number not in _ORDINARY:
            what = self._what(ino, name, fh, attribute)
            if number in _REFUSALS:
                _refusals.append({"op": op, "path": what, "error": str(exc), "at": time.time()})
            self._log_once(op, what, exc)  # a refusal or a failure: the user's answer
        elif isinstance(exc, errors.VaultError) and log.isEnabledFor(logging.DEBUG):
            what = self._what(ino, name, fh, attribute)
            log.debug("%s(%s): %s -> %s", op, what, exc, errno.errorcode[number])
        return pyfuse3.FUSEError(number)

    def _what(
        self, ino: int | None, name: bytes | None, fh: int | None, attribute: bytes | None
    ) -> str:
        """The path the user knows (relative to the mount point), never a node key."""
        if ino is None and fh is not None:
            ino = self.fh_inodes.get(fh)
        if ino is None:
            what = "" if fh is None else f"file handle {fh}"
        else:
            what = self.core.report.paths.show_inode(
                ino, None if name is None else os.fsdecode(name)
            )
        return what if attribute is None else f"{what}, {os.fsdecode(attribute)}"

    def _log_once(self, op: str, what: str, exc: BaseException) -> None:
        mark = (op, what)
        now = time.monotonic()
        if now - self._logged.get(mark, -_REPEAT_LOG_AFTER) >= _REPEAT_LOG_AFTER:
            self._logged[mark] = now
            log.warning("%s(%s) failed: %s", op, what, exc)


class _Handling:
    """One request's bookkeeping (``RequestErrors.handling``). A plain class rather
    than a generator-based context manager: every request enters one, and a warm
    ``grep -r`` makes two per file."""

    __slots__ = ("_attribute", "_errors", "_fh", "_ino", "_name", "_op")

    def __init__(
        self,
        errors_: RequestErrors,
        op: str,
        ino: int | None,
        name: bytes | None,
        fh: int | None,
        attribute: bytes | None,
    ) -> None:
        self._errors, self._op, self._ino = errors_, op, ino
        self._name, self._fh, self._attribute = name, fh, attribute

    def __enter__(self) -> None:
        count(self._op)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # FUSEError is the answer already; a BaseException (trio's cancellation) passes.
        # Returning None never suppresses what the request raised.
        if exc is None or isinstance(exc, pyfuse3.FUSEError) or not isinstance(exc, Exception):
            return
        answer = self._errors.translate(
            exc, self._op, self._ino, self._name, self._fh, self._attribute
        )
        raise answer from None
