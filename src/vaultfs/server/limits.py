"""Burst and daily API call limits per vault, and the throttle of password logins.

Fixed windows (burst: ``burst_window_seconds``, daily: 24 hours) counted in memory:
a restart starts fresh windows. Only calls made with a session count (the vault is
known from the session); calls without one (version list, login, discovery) show
the current numbers of the vault the request's host names (the default vault).

Password logins have their own windows per user name and vault DNS (``AuthThrottle``):
once half the window's calls are used, answers are delayed; when all are used, logins
fail with ``API_LIMIT_EXCEEDED`` until the window ends.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from cachetools import TTLCache

from vaultfs.errors import ApiLimitExceeded

__all__ = ["AuthThrottle", "RateLimiter", "Remaining"]

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
        for window, what in ((burst, "burst"), (daily, "daily")):
            if window.remaining() <= 0:
                raise ApiLimitExceeded(
                    f"API {what} limit exceeded; no calls are processed until the window ends",
                    retry_after=window.retry_after(now),
                )
        burst.count += 1
        daily.count += 1
        return Remaining(burst.remaining(), daily.remaining())

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
        if window.remaining() <= 0:
            raise ApiLimitExceeded(
                "Authentication API burst limit exceeded for this user name; "
                "try again when the window ends",
                retry_after=window.retry_after(now),
            )
        window.count += 1
        return self.delay_ms if window.count > self.limit / 2 else 0
