"""What tasks wait on: one lock per key, there only while someone holds it or waits
for it (``KeyedLocks``); and the next change of something (``Changes``).

The tree reads a document's details, and its relationships, once for every task that
asks at the same time; a lock kept per document for ever would cost about 280 bytes
(a ``trio.Lock`` with its parking lot) for each document ever read: 2.8 MiB after a
walk of 10,000 documents. These locks are made when asked for and dropped when the
last task lets go.

``Changes`` says once what was hand-written in every worker ("set the Event, then make
a new one"): a task notes ``seen = changes.count``, looks at what it watches (awaiting
what it likes meanwhile), and ``wait_since(seen)`` returns at once if anything changed
since it looked, else parks it (trio's ``ParkingLot``) until the next ``notify``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from typing import Generic, TypeVar

import trio

__all__ = ["Changes", "KeyedLocks"]

K = TypeVar("K", bound=Hashable)


class KeyedLocks(Generic[K]):
    def __init__(self) -> None:
        self._locks: dict[K, trio.Lock] = {}

    def __len__(self) -> int:
        """Locks held or waited for now."""
        return len(self._locks)

    @asynccontextmanager
    async def hold(self, key: K) -> AsyncIterator[None]:
        """Hold the lock of ``key`` for the body of ``async with``."""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = trio.Lock()
        try:
            async with lock:
                yield
        finally:
            # trio hands a released lock straight to the next waiter, so a lock that
            # is free here has no one waiting for it: no one else can be given it.
            if not lock.locked() and self._locks.get(key) is lock:
                del self._locks[key]


class Changes:
    """The changes of something tasks wait on, counted."""

    __slots__ = ("_lot", "count")

    def __init__(self) -> None:
        self._lot = trio.lowlevel.ParkingLot()
        #: how many changes so far: a waiter notes it before it looks
        self.count = 0

    def notify(self) -> None:
        """Something changed: wake every waiter."""
        self.count += 1
        self._lot.unpark_all()

    async def wait_since(self, seen: int) -> None:
        """Return once there was a change after ``count`` was ``seen`` (at once when
        there was one already)."""
        if self.count == seen:
            await self._lot.park()
