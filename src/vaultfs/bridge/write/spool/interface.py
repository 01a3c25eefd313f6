"""What the spool's callers hand in and get back.

A check-out starts from a ``Start`` that a ``StartFrom`` reads once the lock is held
(``start_from`` makes one known in advance); a check-in leaves a ``CheckIn``, which a
``CheckedIn`` callback is told of. The write layer imports these from ``spool.spool``,
the spool's one public module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CheckIn", "CheckedIn", "Start", "StartFrom", "start_from"]


@dataclass(frozen=True)
class Start:
    """What a check-out starts from, as read once the lock is held."""

    #: the content to copy into the spool file (None: start empty)
    content: Path | None
    #: md5 of the vault's latest content (None: unknown)
    base_md5: str | None
    #: the name the vault gives the file (uploads carry it)
    filename: str
    #: the latest version (``M.m``) the edit starts from (None: unknown)
    base_version: str | None = None
    #: read from the vault once the lock was held (False: from the mount's index)
    base_read: bool = True


@dataclass(frozen=True)
class CheckIn:
    """What a check-in left in the vault: the document unlocked (or still checked out
    for an editor's lock file: ``locked``), and the new version (None when nothing was
    uploaded) with its checksum and size; ``mtime_ns`` is the time of the last change
    the mount saw written."""

    version: tuple[int, int] | None
    md5: str | None
    size: int
    mtime_ns: int
    locked: bool = False


#: Reads the starting point of a check-out. ``begin`` calls it only once the lock is
#: held, so the content an edit starts from is the vault's latest, never an older copy.
StartFrom = Callable[[], Awaitable[Start]]

#: Told of every check-in the spool finished (doc id, what it left), whoever made it
#: (a release, a rename, the retry worker, the replay at start), so the tree shows it
#: at once.
CheckedIn = Callable[[int, CheckIn], Awaitable[None]]


def start_from(
    content: Path | None,
    *,
    filename: str,
    base_md5: str | None,
    base_version: str | None = None,
) -> StartFrom:
    """A starting point known in advance (tests, and content that is local already)."""

    async def start() -> Start:
        return Start(content, base_md5, filename, base_version)

    return start
