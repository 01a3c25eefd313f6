"""Whether the vault can be reached now: the client's offline mode.

Owns ``Reach``, the one state of the client's connection to its vault, and its moves:

``online``      calls are sent
``offline``     the vault could not be reached (a start that could not sign in, or a
                call whose retries ran out on the transport): calls fail at once with
                ``VaultOffline``, never after a wait
``signed out``  the vault answers again but signing in is refused (an expired
                single sign-on, a changed password): calls fail at once as offline,
                until a sign-in is stored again (``vaultfs login``)

``Reachability.keep_reaching`` is the one task that leaves ``offline``: a probe of the
vault's unversioned ``GET /api/`` (no session) on the ``RECONNECTS`` backoff, then a
sign-in, then ``online``; whoever waits on the work that waited (the index's catch-up,
the spool's queue) is told through ``on_change``.
"""

from __future__ import annotations

import enum
import logging
import random
import time
from collections.abc import Awaitable, Callable

import trio

from vaultfs.errors import (
    SignInExpired,
    UserLockedOut,
    UsernameOrPasswordIncorrect,
    VaultError,
    VaultOffline,
)

from ._retry import RECONNECTS

__all__ = ["Reach", "Reachability"]

log = logging.getLogger("vaultfs.client")


class Reach(enum.StrEnum):
    """Where the client's connection to the vault stands."""

    ONLINE = "online"
    OFFLINE = "offline"
    SIGNED_OUT = "signed out"

    @property
    def message(self) -> str:
        return _MESSAGES[self]


_MESSAGES = {
    Reach.ONLINE: "the vault answers",
    Reach.OFFLINE: "the vault cannot be reached: working offline",
    Reach.SIGNED_OUT: "the vault answers but refuses the sign-in: run `vaultfs login`",
}

#: The moves; any state may be entered from any other but itself.
_MOVES = {state: frozenset(set(Reach) - {state}) for state in Reach}

#: refusals of a sign-in that waiting does not cure
_SIGN_IN_REFUSED = (SignInExpired, UsernameOrPasswordIncorrect, UserLockedOut)


class Reachability:
    """The client's ``Reach``, when it last changed and why, and who is told."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.state = Reach.ONLINE
        #: wall time the vault was last found away, or back (a move between the states
        #: that are not online keeps it)
        self.since = clock()
        #: why the vault is not online (None while online)
        self.reason: str | None = None
        #: the last time away, (left online, came back), in wall time (None: never)
        self.last_away: tuple[float, float] | None = None
        #: told of every move, with the new state
        self.on_change: list[Callable[[Reach], None]] = []
        #: whether ``keep_reaching`` runs: only then does a failed call take the client
        #: offline (a client nobody probes for stays online, as a command's does)
        self.watched = False
        self._clock = clock
        self._moved = trio.lowlevel.ParkingLot()

    @property
    def online(self) -> bool:
        return self.state == Reach.ONLINE

    def refuse(self, what: str) -> None:
        """Raise ``VaultOffline`` for ``what`` unless the vault is online."""
        if not self.online:
            since = time.strftime("%H:%M:%S", time.localtime(self.since))
            raise VaultOffline(f"{what}: {self.state.message} (since {since}: {self.reason})")

    def lost(self, reason: str) -> None:
        """A call's retries ran out on the transport: offline, when watched."""
        if self.watched and self.online:
            self.move(Reach.OFFLINE, reason)

    def move(self, state: Reach, reason: str | None = None) -> None:
        """Enter ``state`` (``reason``: why the vault is not online); a move to the
        state it is in changes nothing."""
        if state == self.state:
            return
        assert state in _MOVES[self.state]
        log.warning("vault %s%s", state.value, f": {reason}" if reason else "")
        now, was_online = self._clock(), self.online
        self.state, self.reason = state, reason
        if state == Reach.ONLINE:
            self.last_away = (self.since, now)
            self.since = now
        elif was_online:
            self.since = now
        self._moved.unpark_all()
        for callback in self.on_change:
            callback(state)

    async def wait_until(self, online: bool) -> None:
        """Wait until the vault is online (``online``) or not."""
        while self.online != online:
            await self._moved.park()

    async def keep_reaching(
        self, probe: Callable[[], Awaitable[bool]], sign_in: Callable[[], Awaitable[object]]
    ) -> None:
        """Until cancelled: whenever the vault is not online, probe it on the
        ``RECONNECTS`` backoff and, once it answers, sign in and go online. A refused
        sign-in is ``signed out``, tried again on the same backoff (a sign-in stored
        meanwhile is then taken up)."""
        rng = random.Random()
        self.watched = True
        while True:
            await self.wait_until(online=False)
            retry = 0
            while not self.online:
                await trio.sleep(RECONNECTS.wait(retry, rng))
                retry += 1
                if not await probe():
                    continue
                try:
                    await sign_in()
                except _SIGN_IN_REFUSED as exc:
                    self.move(Reach.SIGNED_OUT, f"sign-in refused: {exc}")
                except VaultError as exc:
                    log.info("the vault answers, the sign-in does not yet: %s", exc)
                else:
                    self.move(Reach.ONLINE)
