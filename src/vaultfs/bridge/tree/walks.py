"""The walks' share of the vault's API budget.

The vault's budget (by default 2,000 calls per 5 minutes and 100,000 a day) is shared
by every user and integration of the vault. Most of what a program walking the tree
sees costs nothing (the folders, the documents' folders, their source files: the
index holds them), but a document's ``versions/``, ``renditions/``, ``attachments/``
and ``relationships/`` need its details: one call or more per document, which at
100,000 documents is the vault's day. Owns the share of the budget such listings may
spend (``WalkShare``): ``per_day`` calls a day for the mount, and ``burst`` calls per
burst window (5 minutes) for each program, each a bucket that refills evenly over its
window.

A call is a walk's when the request that needs it lists a directory, or names or looks
at a node (a lookup, a stat) for a process that listed a directory within the last
minute (``find``, a file manager; ``cat PATH`` lists nothing and is never a walk): the
FUSE front says which with ``WalkShare.listing`` and ``WalkShare.naming`` (the WebDAV
front with ``WalkShare.listing_by``: a PROPFIND of a folder, for its client), and the
tree asks ``spend`` before each call (the details of a document, a version's record,
a version's renditions, relationships, a page of a view: ``search_results``). The
read-ahead a walk starts is the walk's too (trio's tasks inherit the context).
Past the share such a call is refused (``errors.WalkShareSpent``, EDQUOT), never
answered as empty, and the status names the program that spent it. What a person
asks of a document directly (open, read, save, fields, the vault's search) never asks
the share.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache

from vaultfs import errors

__all__ = ["WALK_BURST", "WALK_CALLS", "WalkShare"]

log = logging.getLogger(__name__)

#: calls a day the walks of one mount may spend: 5% of the spec's default daily limit
WALK_CALLS = 5_000
#: calls the walks of each program may spend in a burst window: 10% of the spec's
#: default burst limit (2,000 calls per 5 minutes)
WALK_BURST = 200
#: seconds a refusal is shown in the status (and the desktop told once while it lasts)
_STOPPED_SHOWN = 600.0
#: programs kept in the status, the biggest spenders first (and remembered at most)
_PROGRAMS_SHOWN = 5
_PROGRAMS_KEPT = 64
_DAY = 86_400.0
#: the vault's burst window (the spec's default)
_BURST_WINDOW = 300.0
#: a process that listed a directory this recently is walking: its lookups and stats
#: are the walk's too
_LISTED_LATELY = 60.0


@dataclass(frozen=True)
class _Walker:
    """The program whose request needs the call: a process (the kernel tells its pid)
    or, on the WebDAV front, a client named by its address (``program``)."""

    pid: int
    program: str | None = None


_walker: contextvars.ContextVar[_Walker | None] = contextvars.ContextVar(
    "vaultfs_walker", default=None
)


@contextlib.contextmanager
def _walk_of(pid: int | None, program: str | None = None) -> Iterator[None]:
    token = _walker.set(_Walker(pid or 0, program))
    try:
        yield
    finally:
        _walker.reset(token)


def _program(pid: int) -> str:
    """The process's name as the kernel tells it (``find``, ``nautilus``)."""
    if pid <= 0:
        return "a program"  # a READDIR of a directory the kernel opened itself
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as file:
            return file.read().strip() or f"pid {pid}"
    except OSError:
        return f"pid {pid}"


def _who(walker: _Walker, spender: _Spender) -> str:
    """The walker as a log line says it: the program and its pid, or the client."""
    return spender.program if walker.program else f"{spender.program} (pid {walker.pid})"


class _Bucket:
    """``size`` calls that come back evenly over ``window`` seconds."""

    def __init__(self, size: int, window: float, now: float) -> None:
        self.size, self._rate = size, size / window
        self._tokens, self._filled = float(size), now

    def left(self, now: float) -> float:
        return min(float(self.size), self._tokens + (now - self._filled) * self._rate)

    def take(self, now: float) -> None:
        self._tokens, self._filled = self.left(now) - 1.0, now


@dataclass
class _Spender:
    """One program's walks: its own burst, what it spent and was refused."""

    program: str
    pid: int
    burst: _Bucket
    calls: int = 0
    refused: int = 0


class WalkShare:
    """The calls walks may spend, and who spent them."""

    def __init__(
        self,
        per_day: int = WALK_CALLS,
        burst: int = WALK_BURST,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_day = per_day
        self.burst = burst
        self._clock = clock
        now = clock()
        #: the mount's walks' calls of the day, whatever program makes them
        self._day = _Bucket(per_day, _DAY, now)
        #: program name -> its burst, what it spent and was refused (each program has
        #: a burst of its own: ``ls versions/`` typed while ``find`` walks goes through)
        self._spenders: dict[str, _Spender] = {}
        self.spent = 0
        self.refused = 0
        #: (program, calls it had spent, wall time) of the last refusal
        self._stopped: tuple[str, int, float] | None = None
        #: processes that listed a directory lately
        self._listers: TTLCache[int, bool] = TTLCache(maxsize=4096, ttl=_LISTED_LATELY)
        #: process -> its name, read once a minute at most (each of a walk's calls
        #: asks; a pid may be another program's a while later)
        self._programs: TTLCache[int, str] = TTLCache(maxsize=4096, ttl=_LISTED_LATELY)

    def listing(self, pid: int | None) -> contextlib.AbstractContextManager[None]:
        """The calls made inside list a directory for ``pid`` (None or 0: a process
        the kernel did not name, one program for all of them): a walk's."""
        if pid:
            self._listers[pid] = True
        return _walk_of(pid)

    def listing_by(self, client: str) -> contextlib.AbstractContextManager[None]:
        """The calls made inside list a folder for a WebDAV ``client`` (its address and
        program, as the front names it): a walk's, as a process's listing is."""
        return _walk_of(None, client)

    def naming(self, pid: int | None) -> contextlib.AbstractContextManager[None]:
        """The calls made inside name or look at a node for ``pid``: a walk's when that
        process listed a directory lately, else asked for directly."""
        if pid and pid in self._listers:
            return _walk_of(pid)
        return contextlib.nullcontext()

    def left(self, program: str | None = None) -> int:
        """Calls a walk (of ``program``; None: of a program that spent nothing yet) may
        make now."""
        now = self._clock()
        spender = self._spenders.get(program) if program is not None else None
        burst = spender.burst.left(now) if spender is not None else float(self.burst)
        return int(min(self._day.left(now), burst))

    def spend(self, what: str) -> None:
        """One call for ``what`` (a log's words: "the details of document 12") is
        about to be made: a walk's is taken from the share, or refused."""
        spender = self.check(what)
        if spender is not None:
            now = self._clock()
            self._day.take(now)
            spender.burst.take(now)
            spender.calls += 1
            self.spent += 1

    def check(self, what: str) -> _Spender | None:
        """Refuse a walk's call for ``what`` when its program has nothing left of the
        share, before anything is done for it (a walk past its share asks hundreds of
        thousands of times); its spender when it may spend, None when it is no walk's."""
        walker = _walker.get()
        if walker is None:
            return None  # asked for directly
        spender = self._spender(walker)
        if self.left(spender.program) >= 1:
            return spender
        spender.refused += 1
        self.refused += 1
        if spender.refused == 1:
            # Once per program: each of its refusals is EDQUOT, not logged again.
            log.warning(
                "%s is walking the vault: stopped at %d calls (the walks' share: "
                "%d per 5 minutes a program, %d a day); first refused: %s",
                _who(walker, spender), spender.calls, self.burst, self.per_day, what,
            )  # fmt: skip
        self._stopped = (spender.program, spender.calls, time.time())
        raise errors.WalkShareSpent(
            f"{_who(walker, spender)} is walking the vault: {what} would "
            f"spend more than the mount's share for walks ({self.burst} calls per 5 "
            f"minutes a program, {self.per_day} a day: -o walk_burst, walk_calls); the vault's "
            "search (.search/, vaultfs search) finds documents at no such cost"
        )

    def walking_spent(self) -> bool:
        """Whether the current request is a walk's whose program has nothing left (its
        read-ahead would only be refused)."""
        walker = _walker.get()
        return walker is not None and self.left(self._program_of(walker)) < 1

    def _program_of(self, walker: _Walker) -> str:
        program = walker.program or self._programs.get(walker.pid)
        if program is None:
            program = self._programs[walker.pid] = _program(walker.pid)
        return program

    def _spender(self, walker: _Walker) -> _Spender:
        program = self._program_of(walker)
        spender = self._spenders.pop(program, None) or _Spender(
            program, walker.pid, _Bucket(self.burst, _BURST_WINDOW, self._clock())
        )
        spender.pid = walker.pid
        self._spenders[program] = spender  # the latest last
        if len(self._spenders) > _PROGRAMS_KEPT:
            del self._spenders[next(iter(self._spenders))]
        return spender

    def status(self) -> dict[str, Any]:
        """The share, what is left of it (``left``: for a program that spent nothing
        yet) and who spent it (``.vaultfs/status``)."""
        spenders = sorted(self._spenders.values(), key=lambda s: -(s.calls + s.refused))
        stopped = None
        if self._stopped is not None and time.time() - self._stopped[2] < _STOPPED_SHOWN:
            program, calls, at = self._stopped
            stopped = {"program": program, "calls": calls, "at": at}
        return {
            "burst": self.burst,
            "calls_per_day": self.per_day,
            "left": self.left(),
            "spent": self.spent,
            "refused": self.refused,
            "programs": [
                {
                    "program": s.program,
                    "pid": s.pid,
                    "calls": s.calls,
                    "refused": s.refused,
                    "left": self.left(s.program),
                }
                for s in spenders[:_PROGRAMS_SHOWN]
            ],
            "stopped": stopped,
        }
