"""Burst and daily API call limits per vault, and the throttle of password logins.

Fixed windows (burst: ``burst_window_seconds``, daily: 24 hours) counted in memory
(``RateLimiter``, one process on SQLite: a restart starts fresh windows) or in the
database (``SharedRateLimiter``, every process on a shared PostgreSQL counts into the
same windows, which outlive restarts). Only calls made with a session count (the vault is
known from the session); calls without one (version list, login, discovery) show
the current numbers of the vault the request's host names (the default vault).

Password logins have their own windows per user name and vault DNS (``AuthThrottle``):
once half the window's calls are used, answers are delayed; when all are used, logins
fail with ``API_LIMIT_EXCEEDED`` until the window ends (``SharedAuthThrottle``: in
the database, as above).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Protocol

from cachetools import TTLCache

from vaultfs.errors import ApiLimitExceeded

from .storage import counters
from .storage.db import Database
from .storage.sql import Conn

__all__ = [
    "ApiLimiter",
    "AuthThrottle",
    "LoginThrottle",
    "RateLimiter",
    "Remaining",
    "SharedAuthThrottle",
    "SharedRateLimiter",
]

_DAY = 86_400


@dataclass(frozen=True)
class Remaining:
    burst: int
    daily: int


@dataclass
class _Window:
    length: int
    limit: int
    start: float = 0.0
    count: int = 0

    def roll(self, now: float) -> None:
        if now - self.start >= self.length:
            self.start = now - (now - self.start) % self.length if self.start else now
            self.count = 0

    def remaining(self) -> int:
        return max(0, self.limit - self.count)

    def retry_after(self, now: float) -> float:
        return self.start + self.length - now


class ApiLimiter(Protocol):
    def charge(self, vault_id: int) -> Remaining: ...

    def peek(self, vault_id: int) -> Remaining: ...


class LoginThrottle(Protocol):
    def charge(self, username: str, dns: str) -> int: ...


def _charge_api(burst: _Window, daily: _Window, now: float) -> Remaining:
    """Count one call in both windows, or raise when either is used up (counts nothing)."""
    for window, what in ((burst, "burst"), (daily, "daily")):
        if window.remaining() <= 0:
            raise ApiLimitExceeded(
                f"API {what} limit exceeded; no calls are processed until the window ends",
                retry_after=window.retry_after(now),
            )
    burst.count += 1
    daily.count += 1
    return Remaining(burst.remaining(), daily.remaining())


def _charge_login(window: _Window, now: float, delay_ms: int) -> int:
    if window.remaining() <= 0:
        raise ApiLimitExceeded(
            "Authentication API burst limit exceeded for this user name; "
            "try again when the window ends",
            retry_after=window.retry_after(now),
        )
    window.count += 1
    return delay_ms if window.count > window.limit / 2 else 0


@dataclass
class RateLimiter:
    burst_limit: int
    daily_limit: int
    burst_seconds: int = 300
    _vaults: dict[int, tuple[_Window, _Window]] = field(default_factory=dict)

    def _windows(self, vault_id: int, now: float) -> tuple[_Window, _Window]:
        windows = self._vaults.get(vault_id)
        if windows is None:
            windows = (
                _Window(self.burst_seconds, self.burst_limit, now),
                _Window(_DAY, self.daily_limit, now),
            )
            self._vaults[vault_id] = windows
        for window in windows:
            window.roll(now)
        return windows

    def charge(self, vault_id: int) -> Remaining:
        """Count one call; ApiLimitExceeded (with retry_after) when a limit is used up."""
        now = time.monotonic()
        burst, daily = self._windows(vault_id, now)
        return _charge_api(burst, daily, now)

    def peek(self, vault_id: int) -> Remaining:
        burst, daily = self._windows(vault_id, time.monotonic())
        return Remaining(burst.remaining(), daily.remaining())


#: Auth windows kept at most (one per user name and DNS seen in the window); beyond
#: it the oldest are forgotten, which only ever makes the throttle more lenient.
_AUTH_KEYS = 100_000


class AuthThrottle:
    """Password logins per (user name, vault DNS) in fixed windows."""

    def __init__(self, limit: int, window_seconds: int, delay_ms: int) -> None:
        self.limit = limit
        self.delay_ms = delay_ms
        # An entry lives exactly one window from its first call (TTLCache expires
        # entries ``ttl`` after insertion; the window is mutated in place, never
        # re-inserted, so its expiry does not move).
        self._windows: TTLCache[tuple[str, str], _Window] = TTLCache(
            maxsize=_AUTH_KEYS, ttl=window_seconds, timer=time.monotonic
        )
        self._length = window_seconds

    def charge(self, username: str, dns: str) -> int:
        """Count one login; returns the delay (ms) to apply, or raises ApiLimitExceeded."""
        now = time.monotonic()
        key = (username.strip().lower(), dns.strip().lower())
        window = self._windows.get(key)
        if window is None:
            window = _Window(self._length, self.limit, now)
            self._windows[key] = window
        return _charge_login(window, now, self.delay_ms)


# --- shared by the processes of one database -------------------------------------------

#: A shared throttle drops ended windows every this many logins (per process).
_FORGET_EVERY = 1000


class _SharedWindows:
    """Windows (length, limit) by name, read and written back in one short transaction.

    Wall-clock time, not monotonic: the windows are compared across processes.
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    def load(
        self, conn: Conn, wanted: dict[str, tuple[int, int]], now: float
    ) -> dict[str, _Window]:
        rows = counters.lock_windows(conn, sorted(wanted), int(now * 1000))
        windows: dict[str, _Window] = {}
        for name, (length, limit) in wanted.items():
            start_ms, count = rows[name]
            window = _Window(length, limit, start_ms / 1000, count)
            window.roll(now)
            windows[name] = window
        return windows

    def save(self, conn: Conn, windows: dict[str, _Window]) -> None:
        counters.save_windows(
            conn,
            [
                (name, int(w.start * 1000), w.count, int((w.start + w.length) * 1000))
                for name, w in windows.items()
            ],
        )


class SharedRateLimiter(_SharedWindows):
    """``RateLimiter`` counted in the database, for processes sharing it."""

    def __init__(
        self, db: Database, burst_limit: int, daily_limit: int, burst_seconds: int = 300
    ) -> None:
        super().__init__(db)
        self._spec = {"burst": (burst_seconds, burst_limit), "daily": (_DAY, daily_limit)}

    def _wanted(self, vault_id: int) -> dict[str, tuple[int, int]]:
        return {f"api/{vault_id}/{kind}": spec for kind, spec in self._spec.items()}

    def _charge(self, conn: Conn, vault_id: int, now: float, count: bool) -> Remaining:
        wanted = self._wanted(vault_id)
        windows = self.load(conn, wanted, now)
        burst, daily = (windows[name] for name in wanted)
        if not count:
            return Remaining(burst.remaining(), daily.remaining())
        remaining = _charge_api(burst, daily, now)
        self.save(conn, windows)
        return remaining

    def charge(self, vault_id: int) -> Remaining:
        return self.db.short_sync(self._charge, vault_id, time.time(), True)

    def peek(self, vault_id: int) -> Remaining:
        return self.db.short_sync(self._charge, vault_id, time.time(), False)


class SharedAuthThrottle(_SharedWindows):
    """``AuthThrottle`` counted in the database, for processes sharing it."""

    def __init__(self, db: Database, limit: int, window_seconds: int, delay_ms: int) -> None:
        super().__init__(db)
        self.limit = limit
        self.delay_ms = delay_ms
        self._length = window_seconds
        self._calls = itertools.count(1)

    def _charge(self, conn: Conn, name: str, now: float) -> int:
        if next(self._calls) % _FORGET_EVERY == 0:
            counters.forget_expired(conn, int(now * 1000))
        windows = self.load(conn, {name: (self._length, self.limit)}, now)
        # Raises when the window is used up: the transaction then saves nothing.
        delay = _charge_login(windows[name], now, self.delay_ms)
        self.save(conn, windows)
        return delay

    def charge(self, username: str, dns: str) -> int:
        name = f"auth/{username.strip().lower()}/{dns.strip().lower()}"
        return self.db.short_sync(self._charge, name, time.time())
