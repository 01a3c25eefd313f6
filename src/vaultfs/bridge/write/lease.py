"""The check-out as a lease with one owner: every document this client checks out.

Owns the vault's lock of every document as this client (a mount, or a WebDAV front)
holds it. Whatever needs a check-out asks the ``Leases`` for one, for a ``Reason``: a
save (the spool's entry), an editor's lock file, a WebDAV lock, a check-out for a trip.
Only this module takes and releases the vault's lock, keeps its durable mark
(``<spool>/locks/<doc_id>``), releases at start what a dead daemon left, answers "held
here, and by whom?", and tells the mount when a check-out begins or ends.

A lease's state is a ``LeaseState``, moved only through the one table ``LEASE_MOVES``:

``free``       nothing of this client holds the document (no lease object is kept)
``owed``       taken while the vault could not be reached (offline): held here, and
               the vault's lock is asked for when the vault is back, before the
               check-in it is owed for (``settle``)
``taking``     the vault's lock is being asked for
``held``       the lock is this client's, for one or more reasons
``releasing``  the last reason went; the lock is being released

Fenced across one user's clients. The vault lets a user lock what that user holds
already, so it cannot tell one user's clients apart; the lease does. Before asking for
a lock it looks (``GET /lock``): a lock of this user that this client does not hold
(no lease, no mark of its own) is another client's (the user's other mount, machine or
WebDAV drive) and is refused as another user's is (``LockedByOther``: EBUSY, 423).
Before a check-in uploads, ``verify`` reads the lock again (one call) and refuses when
it is gone or someone else's; its date, first read there, is the lease's token, kept
in the mark: a later look that finds this user's lock with another date finds it taken
over, and a start after a crash releases a marked lock only when its date is the
mark's. A mark without a date (taken, never verified) is taken for this client's; a
mark of a check-out taken offline (``owed``) names no lock, unless a lock was asked for
and its answer lost before the vault went away (``asked``): that lock may be this
client's, and is taken so, as a mark without a date is. For the same reason a take
whose answer was lost and whose look failed too keeps its mark.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import os
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import trio

from vaultfs.bridge.write.spool.queue import PERMANENT, describe
from vaultfs.bridge.write.spool.states import Machine
from vaultfs.client import Attempt, RetryPolicy, VaultApi, retrying, surely_not_sent
from vaultfs.durable import DIR_MODE, FILE_MODE, fsync_dir
from vaultfs.errors import InvalidDocument, LockedByOther, VaultError, VaultUnavailable

__all__ = ["LEASE_MOVES", "Lease", "LeaseState", "Leases", "Reason"]

log = logging.getLogger(__name__)

_MARKS = "locks"
#: ``<spool>/trips/<doc_id>``: the documents checked out for a trip (``Reason.TRIP``),
#: which outlive the daemon: a start takes them up (``adopt_trips``)
_TRIPS = "trips"


class LeaseState(enum.StrEnum):
    """Where this client's check-out of a document stands."""

    FREE = "free"
    OWED = "owed"
    TAKING = "taking"
    HELD = "held"
    RELEASING = "releasing"

    @property
    def message(self) -> str:
        return _MESSAGES[self]


_MESSAGES = {
    LeaseState.FREE: "not checked out by this client",
    LeaseState.OWED: "checked out offline: the vault's lock is asked for once it is back",
    LeaseState.TAKING: "the vault's lock is being asked for",
    LeaseState.HELD: "checked out by this client",
    LeaseState.RELEASING: "the vault's lock is being released",
}

L = LeaseState
#: The moves of a lease. A lock refused (or a take cancelled) goes back to free, or to
#: owed when it was owed; a release that failed for a while leaves the lease held (its
#: mark stays, the lock is released again later); a release refused for good frees it
#: all the same. An owed lease whose last reason goes before the vault is back is free
#: without a call.
LEASE_MOVES: Machine[LeaseState] = Machine(
    "lease",
    L.FREE,
    {
        L.FREE: frozenset({L.TAKING, L.OWED}),
        L.OWED: frozenset({L.TAKING, L.FREE}),
        L.TAKING: frozenset({L.HELD, L.FREE, L.OWED}),
        L.HELD: frozenset({L.RELEASING, L.FREE}),
        L.RELEASING: frozenset({L.FREE, L.HELD}),
    },
)


class Reason(enum.StrEnum):
    """Why a document is checked out; a lease holds a count of each."""

    SAVE = "save"
    EDITOR = "editor's lock file"
    WEBDAV = "WebDAV lock"
    TRIP = "check-out for offline work"


#: What may check a document out offline, owing the vault's lock: what a user saves
#: (it checks in through the conflict rule), not a check-out meant to hold the vault.
OWED_REASONS = frozenset({Reason.SAVE, Reason.EDITOR, Reason.WEBDAV})


@dataclass
class Lease:
    """One document's check-out by this client."""

    doc_id: int
    state: LeaseState = LeaseState.FREE
    reasons: Counter[Reason] = field(default_factory=Counter)
    #: the lock's date as the vault gave it when this client took it (None: unknown)
    token: str | None = None
    #: woken on every move: a take waits while another take or a release is under way
    moved: trio.lowlevel.ParkingLot = field(default_factory=trio.lowlevel.ParkingLot)

    def move(self, new: LeaseState) -> None:
        """Move to ``new`` through the table (``IllegalTransition`` for a move it lacks)."""
        self.state = LEASE_MOVES.move(self.state, new, what=f"of document {self.doc_id}")
        self.moved.unpark_all()


#: Told when a lease begins (``True``) or ends (``False``), with the reason that began
#: or ended it (None: a lock an earlier daemon left, released): the mount shows the
#: document checked out or not at once.
Shown = Callable[[int, bool, Reason | None], Awaitable[None]]


async def _nothing(doc_id: int, held: bool, reason: Reason | None) -> None:
    return None


class Leases:
    """Every check-out of one client (a mount, or a WebDAV front), each one lease."""

    def __init__(
        self,
        directory: Path,
        client: VaultApi,
        *,
        user_id: int | None = None,
        retry: RetryPolicy,
        run_sync: Callable[..., Awaitable[Any]] = trio.to_thread.run_sync,
    ) -> None:
        #: the spool's directory: the marks are ``<directory>/locks/<doc_id>``
        self.directory = directory
        self.client = client
        self.user_id = user_id
        self.retry = retry
        self.run_sync = run_sync
        self.shown: Shown = _nothing
        self.rng = random.Random()
        self._leases: dict[int, Lease] = {}

    # --- who holds what --------------------------------------------------------

    def is_me(self, user_id: object) -> bool:
        me = self.user_id if self.user_id is not None else self.client.user_id
        return me is not None and str(user_id) == str(me)

    def held_here(self, doc_id: int) -> bool:
        """Whether this client holds (or is taking, or releasing) the check-out."""
        return doc_id in self._leases

    def holding(self, doc_id: int, reason: Reason) -> bool:
        lease = self._leases.get(doc_id)
        return lease is not None and lease.reasons[reason] > 0

    def state(self, doc_id: int) -> LeaseState:
        lease = self._leases.get(doc_id)
        return lease.state if lease is not None else LeaseState.FREE

    def held(self) -> dict[int, list[str]]:
        """Every lease and its reasons, for the status."""
        return {
            doc_id: sorted(r.value for r, n in lease.reasons.items() if n > 0)
            for doc_id, lease in sorted(self._leases.items())
        }

    async def holder(self, doc_id: int) -> object | None:
        """Who holds the document's lock, as the vault says now (one call)."""
        lock = await self.client.get_lock(doc_id)
        return lock.get("locked_by__v") if lock else None

    # --- taking and releasing --------------------------------------------------

    def adopt(self, doc_id: int, reason: Reason) -> None:
        """A lease found on disk: the spool's entry of a save an earlier daemon left
        holds the lock that daemon took (its mark's date is the token)."""
        lease = self._leases.get(doc_id)
        if lease is None:
            mark = _read_mark(self.directory, doc_id)
            if mark.owed:  # checked out offline: the lock is owed
                lease = self._leases[doc_id] = Lease(doc_id, LeaseState.OWED)
            else:
                lease = self._leases[doc_id] = Lease(doc_id, LeaseState.HELD, token=mark.token)
        lease.reasons[reason] += 1

    def adopt_trips(self) -> None:
        """The check-outs for a trip an earlier daemon took: held again, for the trip
        (before ``release_stale``, which would release their locks otherwise)."""
        for doc_id in _trips(self.directory):
            if _read_mark(self.directory, doc_id).locked:
                self.adopt(doc_id, Reason.TRIP)
            else:  # its lock was never recorded as taken: no trip to take up
                _drop_trip(self.directory, doc_id)

    # --- a check-out for a trip (``vaultfs checkout``/``checkin``) ----------------

    async def check_out_for_trip(self, doc_id: int) -> None:
        """Check the document out for a trip (once: a second time changes nothing)."""
        if not self.holding(doc_id, Reason.TRIP):
            await self.take(doc_id, Reason.TRIP)

    async def end_trip(self, doc_id: int) -> None:
        """End the document's check-out for a trip (a save under way still holds it)."""
        if self.holding(doc_id, Reason.TRIP):
            await self.drop(doc_id, Reason.TRIP)

    def checkout_of(self, doc_id: int) -> dict[str, Any]:
        """This client's check-out of the document: its state and why."""
        return {"state": self.state(doc_id).value, "why": self.held().get(doc_id, [])}

    async def take(self, doc_id: int, reason: Reason) -> bool:
        """Check the document out for ``reason``; True when the vault's lock was taken
        now, False when this client held it already. ``LockedByOther`` when another
        user, or another client of this user, holds it."""
        while True:
            lease = self._leases.get(doc_id)
            if lease is None:
                break
            if lease.state in (LeaseState.HELD, LeaseState.OWED):
                if reason == Reason.TRIP:
                    if lease.state == LeaseState.OWED:  # a trip's must hold the vault
                        await self.settle(doc_id)
                    await self.run_sync(_write_trip, self.directory, doc_id)
                lease.reasons[reason] += 1
                return False
            await lease.moved.park()  # a take or a release under way: then look again
        lease = self._leases[doc_id] = Lease(doc_id)
        owed = reason in OWED_REASONS
        if owed and not self.client.reach.online:
            await self._owe(lease, reason)
            return True
        lease.move(LeaseState.TAKING)
        try:
            lease.token = await self._lock(doc_id)
        except BaseException as exc:
            if owed and isinstance(exc, VaultUnavailable) and not self.client.reach.online:
                await self._owe(lease, reason)  # the vault went away while asking
                return True
            lease.move(LeaseState.FREE)
            del self._leases[doc_id]
            raise
        lease.move(LeaseState.HELD)
        lease.reasons[reason] += 1
        if reason == Reason.TRIP:
            await self.run_sync(_write_trip, self.directory, doc_id)
        await self.shown(doc_id, True, reason)
        return True

    async def _owe(self, lease: Lease, reason: Reason) -> None:
        """Offline: checked out here now, the vault's lock owed (``settle``)."""
        with trio.CancelScope(shield=True):
            await self.run_sync(_write_owed, self.directory, lease.doc_id)
        lease.move(LeaseState.OWED)
        lease.reasons[reason] += 1
        log.info("lease: doc %d checked out offline (%s)", lease.doc_id, reason.value)
        await self.shown(lease.doc_id, True, reason)

    def owed(self, doc_id: int) -> bool:
        """Whether the document was checked out offline and its lock is still owed."""
        return self.state(doc_id) == LeaseState.OWED

    async def settle(self, doc_id: int) -> None:
        """Take the vault's lock an offline check-out owes (nothing when it owes none):
        before its check-in. ``LockedByOther`` when someone (another user, another
        client of this user) checked the document out meanwhile; a failure that may
        pass leaves it owed."""
        lease = self._leases.get(doc_id)
        if lease is None or lease.state != LeaseState.OWED:
            return
        lease.move(LeaseState.TAKING)
        try:
            lease.token = await self._lock(doc_id)
        except BaseException:
            with trio.CancelScope(shield=True):  # still owed, after a crash too
                await self.run_sync(_write_owed, self.directory, doc_id)
            lease.move(LeaseState.OWED)
            raise
        lease.move(LeaseState.HELD)
        log.info("lease: doc %d: the lock owed since offline is taken", doc_id)

    async def _lock(self, doc_id: int) -> str | None:
        """Take the vault's lock for this client; its date when known already (a lock
        an earlier daemon of this client took), else None (``verify`` learns it)."""
        earlier = await self.run_sync(_read_mark, self.directory, doc_id)
        lock = await self.client.get_lock(doc_id)
        if lock:
            return await self._held_already(doc_id, lock, earlier)
        # Marked before it is asked for: a daemon that dies from here on leaves a
        # mark, and the next start releases the lock unless an entry took it over.
        await self.run_sync(_write_mark, self.directory, doc_id, None)
        await self._ask(doc_id)
        # Its date, the token, is read by the first ``verify`` (no call here).
        return None

    async def _held_already(self, doc_id: int, lock: dict[str, Any], earlier: _Mark) -> str | None:
        """The lock exists before this client asked: this client's own (an earlier
        daemon's mark with its date), or someone else's."""
        holder = lock.get("locked_by__v")
        since = _token(lock)
        if not self.is_me(holder):
            log.info("lease: doc %d is checked out by user %s", doc_id, holder)
            raise LockedByOther(f"document {doc_id} is checked out by user {holder}")
        marked, token = earlier.locked, earlier.token
        if marked and token in (None, since):
            log.info("lease: doc %d: the lock an earlier daemon took is ours still", doc_id)
            await self.run_sync(_write_mark, self.directory, doc_id, since)
            return since
        log.info("lease: doc %d is checked out by this user on another client", doc_id)
        raise LockedByOther(
            f"document {doc_id} is checked out by you on another client (another mount, "
            f"machine or WebDAV drive) since {since}"
        )

    async def _ask(self, doc_id: int) -> None:
        """POST the lock (its mark written). A refusal is followed by asking who holds
        it: an answer lost on the way back may hide a lock that was taken (then it is
        ours). The mark is dropped when the lock surely was not taken; it stays when
        that cannot be known (the look failed too, or the ask was cancelled), so that
        a take again, a settle or the next start finds the lock this client's."""
        try:
            await self.client.lock(doc_id)
        except VaultError as refusal:
            if surely_not_sent(refusal):
                await self._unmark(doc_id)
                raise
            try:
                lock = await self.client.get_lock(doc_id)
            except VaultError:
                log.info("lease: doc %d: whether the lock was taken is not known", doc_id)
                raise refusal from None
            if not lock:
                await self._unmark(doc_id)
                raise
            holder = lock.get("locked_by__v")
            if not self.is_me(holder):
                await self._unmark(doc_id)
                raise LockedByOther(f"document {doc_id} is checked out by user {holder}") from None

    async def _unmark(self, doc_id: int) -> None:
        with trio.CancelScope(shield=True):
            await self.run_sync(_drop_mark, self.directory, doc_id)

    async def drop(self, doc_id: int, reason: Reason) -> bool:
        """``reason`` no longer holds the document; the last reason releases the vault's
        lock. True when the lock is released (or was not ours), False when another
        reason still holds it. A release that failed for a while raises, and leaves
        the lease held for ``reason`` (its mark stays: tried again, or at the next
        start)."""
        lease = self._leases.get(doc_id)
        while lease is not None and lease.state not in (LeaseState.HELD, LeaseState.OWED):
            await lease.moved.park()  # a release under way (or the lease forgotten)
            lease = self._leases.get(doc_id)
        if lease is None or lease.reasons[reason] <= 0:
            return lease is None
        lease.reasons[reason] -= 1
        if reason == Reason.TRIP and lease.reasons[reason] == 0:
            await self.run_sync(_drop_trip, self.directory, doc_id)
        if +lease.reasons:
            return False
        if lease.state == LeaseState.OWED:  # no lock of the vault's to release
            await self.run_sync(_drop_mark, self.directory, doc_id)
            lease.move(LeaseState.FREE)
            del self._leases[doc_id]
            await self.shown(doc_id, False, reason)
            return True
        lease.move(LeaseState.RELEASING)
        try:
            await self._release(doc_id)
        except BaseException:
            lease.reasons[reason] += 1
            if reason == Reason.TRIP:
                with trio.CancelScope(shield=True):  # still the trip's
                    await self.run_sync(_write_trip, self.directory, doc_id)
            lease.move(LeaseState.HELD)
            raise
        lease.move(LeaseState.FREE)
        del self._leases[doc_id]
        await self.shown(doc_id, False, reason)
        return True

    async def drop_quietly(self, doc_id: int, reason: Reason) -> bool:
        """``drop``; a release that failed is logged (the mark stays, the next start
        releases it) and the lease ends all the same."""
        try:
            return await self.drop(doc_id, reason)
        except VaultError:
            self.forget(doc_id, keep_mark=True)
            return False

    def forget(self, doc_id: int, *, keep_mark: bool = False) -> None:
        """End a lease without asking the vault: the document is gone (its lock with
        it), or its check-out was taken over; ``keep_mark``: the next start releases
        the lock."""
        lease = self._leases.pop(doc_id, None)
        if lease is not None and lease.state != LeaseState.FREE:
            lease.move(LeaseState.FREE)
        if not keep_mark:
            _drop_mark(self.directory, doc_id)

    async def _release(self, doc_id: int) -> None:
        """Unlock and drop the mark; a refusal for good drops the mark too (the lock is
        the vault's business then)."""
        try:
            await self.client.unlock(doc_id)
        except VaultError as exc:
            log.warning("lease: doc %d unlock failed: %s", doc_id, describe(exc))
            if not isinstance(exc, PERMANENT):
                raise
        await self.run_sync(_drop_mark, self.directory, doc_id)

    async def end_all(self, reason: Reason) -> None:
        """The client stops: every check-out held for ``reason`` alone ends."""
        for doc_id, lease in list(self._leases.items()):
            if lease.reasons[reason] > 0:
                lease.reasons[reason] = 1
                with trio.CancelScope(shield=True):
                    await self.drop_quietly(doc_id, reason)

    # --- the fence -------------------------------------------------------------

    async def verify(self, doc_id: int) -> str | None:
        """Why this client's check-out no longer holds, as the vault says now (one
        call); None: it holds. Asked before a check-in uploads: a lock undone,
        someone else's, or this user's taken again by another client (another date)."""
        lock = await self.client.get_lock(doc_id)
        if not lock:
            return "the check-out was undone or released elsewhere while this edit was open"
        holder = lock.get("locked_by__v")
        if not self.is_me(holder):
            return f"the check-out was taken over by user {holder} while this edit was open"
        lease = self._leases.get(doc_id)
        since = _token(lock)
        if lease is None or since is None:
            return None
        if lease.token is None:  # the first look since it was taken: this is its date
            lease.token = since
            await self.run_sync(_write_mark, self.directory, doc_id, since)
        elif since != lease.token:
            return (
                f"the check-out was taken over by another client of this user (since "
                f"{since}; this client's was since {lease.token})"
            )
        return None

    # --- what an earlier daemon left ------------------------------------------

    async def release_stale(self) -> None:
        """Release every lock an earlier daemon of this cache took and no lease took
        over (it died between the lock and its entry, or before the unlock), trying
        again under the check-ins' policy while the vault cannot be reached. A lock
        that is no longer the one its mark names (another client's now) is left."""

        async def release_all(attempt: Attempt) -> None:
            await self.client.reach.wait_until(online=True)
            failure: VaultError | None = None
            for doc_id in _marked(self.directory):
                if doc_id in self._leases:
                    continue  # taken over by an entry, or checked out again since
                # A take asked meanwhile waits for this release (the lease is taking
                # here), then locks afresh.
                lease = self._leases[doc_id] = Lease(doc_id, LeaseState.TAKING)
                try:
                    await self._release_stale(doc_id)
                except VaultError as exc:
                    failure = exc  # the others are still tried
                finally:
                    lease.move(LeaseState.FREE)
                    del self._leases[doc_id]
            if failure is not None:
                raise failure

        await retrying(
            release_all,
            policy=self.retry,
            rng=self.rng,
            what="releasing the locks an earlier daemon left",
            retryable=lambda exc: True,
        )

    async def _release_stale(self, doc_id: int) -> None:
        mark = await self.run_sync(_read_mark, self.directory, doc_id)
        if mark.owed and not mark.locked:
            # Checked out offline and never settled: no lock of the vault's is ours.
            await self.run_sync(_drop_mark, self.directory, doc_id)
            return
        token = mark.token
        try:
            lock = await self.client.get_lock(doc_id)
        except InvalidDocument:
            lock = None
        since = _token(lock or {})
        if not lock or not self.is_me(lock.get("locked_by__v")) or token not in (None, since):
            log.info("lease: doc %d: the lock an earlier daemon left is no longer its own", doc_id)
            await self.run_sync(_drop_mark, self.directory, doc_id)
            return
        log.warning("lease: doc %d lock left by an earlier daemon; releasing it", doc_id)
        await self._release(doc_id)
        await self.shown(doc_id, False, None)


def _token(lock: dict[str, Any]) -> str | None:
    since = lock.get("locked_date__v")
    return str(since) if since else None


# --- the marks: ``<spool>/locks/<doc_id>``, holding the lock's date as JSON ----------


def _write_mark(
    directory: Path, doc_id: int, token: str | None, owed: bool = False, asked: bool = False
) -> None:
    """Record, durably, that this client is about to lock ``doc_id`` (token None,
    before asking), holds it since ``token``, or checked it out offline and owes the
    vault's lock (``owed``; ``asked``: a lock asked for may have been taken)."""
    folder = directory / _MARKS
    folder.mkdir(mode=DIR_MODE, exist_ok=True)
    path = folder / str(doc_id)
    temp = folder / f".{doc_id}.new"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        if owed:
            os.write(fd, json.dumps({"owed": True, "asked": asked}).encode())
        elif token:
            os.write(fd, json.dumps({"locked_date": token}).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    fsync_dir(folder)


class _Mark(NamedTuple):
    """What ``doc_id``'s mark says."""

    #: it names a lock of the vault's this client asked for (or holds); for an owed
    #: check-out, one whose answer was lost before the vault went away
    locked: bool
    #: that lock's date, when known
    token: str | None = None
    #: a check-out taken offline: no lock was asked for
    owed: bool = False


def _write_owed(directory: Path, doc_id: int) -> None:
    """Record that the check-out is owed, keeping whether a lock asked for (a mark
    naming a lock) may have been taken."""
    _write_mark(directory, doc_id, None, owed=True, asked=_read_mark(directory, doc_id).locked)


def _read_mark(directory: Path, doc_id: int) -> _Mark:
    try:
        text = (directory / _MARKS / str(doc_id)).read_text()
    except FileNotFoundError:
        return _Mark(False)
    with contextlib.suppress(ValueError, AttributeError):
        mark = json.loads(text) if text.strip() else {}
        if mark.get("owed"):
            return _Mark(bool(mark.get("asked")), owed=True)
        token = mark.get("locked_date")
        return _Mark(True, str(token) if token else None)
    return _Mark(True)


def _write_trip(directory: Path, doc_id: int) -> None:
    folder = directory / _TRIPS
    folder.mkdir(mode=DIR_MODE, exist_ok=True)
    fd = os.open(folder / str(doc_id), os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(folder)


def _drop_trip(directory: Path, doc_id: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        (directory / _TRIPS / str(doc_id)).unlink()


def _trips(directory: Path) -> list[int]:
    folder = directory / _TRIPS
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def _drop_mark(directory: Path, doc_id: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        (directory / _MARKS / str(doc_id)).unlink()


def _marked(directory: Path) -> list[int]:
    """The documents this client asked a lock of and never recorded as released."""
    folder = directory / _MARKS
    if not folder.is_dir():
        return []
    marks = []
    for path in folder.iterdir():
        if path.name.isdigit():
            marks.append(int(path.name))
        else:
            path.unlink()  # a mark being written when the daemon died, or not ours
    return sorted(marks)
