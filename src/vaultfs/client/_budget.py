"""The rate-limit budget: counts every request and paces calls before the burst limit.

Every response's remaining-call headers are recorded; when the burst remainder falls
below a low-water mark the meter spaces calls out (one at a time, at the average rate
the burst limit allows) instead of running into ``API_LIMIT_EXCEEDED``.
"""

from __future__ import annotations

from collections.abc import Mapping

import trio

from vaultfs.wire import BURST_REMAINING_HEADER, DAILY_REMAINING_HEADER

from ._types import Budget

__all__ = ["BudgetMeter"]

#: The same counts under the names the real service's own clients read: a server may
#: send either form (or both; the spec's name wins).
_ALSO_NAMED = {
    BURST_REMAINING_HEADER: "X-VaultAPI-BurstLimitRemaining",
    DAILY_REMAINING_HEADER: "X-VaultAPI-DailyLimitRemaining",
}
#: Below this many remaining burst calls the client always paces...
_LOW_WATER_MIN = 20
#: ... and below this share of the largest burst remainder seen.
_LOW_WATER_SHARE = 0.02


class BudgetMeter:
    """Owns the ``Budget`` of one client."""

    def __init__(self, burst_window: float) -> None:
        self.budget = Budget()
        #: length of the burst window in seconds (the spec's default: 5 minutes)
        self._burst_window = burst_window
        #: largest burst remainder seen: our best guess of the burst limit
        self._burst_seen = 0
        self._pace_lock = trio.Lock()

    def count(self, endpoint: str) -> None:
        """Record one request to ``endpoint`` (``"GET /objects/documents/{id}"``)."""
        self.budget.calls += 1
        self.budget.by_endpoint[endpoint] = self.budget.by_endpoint.get(endpoint, 0) + 1

    def observe(self, headers: Mapping[str, str]) -> None:
        """Record the remaining-call headers of a response (absent ones keep their value)."""
        burst = _int_or_none(_either(headers, BURST_REMAINING_HEADER))
        if burst is not None:
            self.budget.burst_remaining = burst
            self._burst_seen = max(self._burst_seen, burst)
            self.budget.burst_limit_seen = self._burst_seen
        daily = _int_or_none(_either(headers, DAILY_REMAINING_HEADER))
        if daily is not None:
            self.budget.daily_remaining = daily

    def pace_delay(self) -> float:
        """Seconds to wait before the next call (0 while the budget is comfortable)."""
        remaining = self.budget.burst_remaining
        if remaining is None:
            return 0.0
        low_water = max(_LOW_WATER_MIN, self._burst_seen * _LOW_WATER_SHARE)
        if remaining >= low_water:
            return 0.0
        # The average spacing the burst limit sustains over its window.
        return self._burst_window / max(self._burst_seen, _LOW_WATER_MIN)

    async def pace(self) -> None:
        """Wait as ``pace_delay`` says; paced callers go one at a time."""
        if self.pace_delay() == 0.0:
            return
        async with self._pace_lock:
            # Re-check: a response seen while waiting for the lock may have lifted it.
            delay = self.pace_delay()
            if delay:
                await trio.sleep(delay)


def _either(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    return value if value is not None else headers.get(_ALSO_NAMED[name])


def _int_or_none(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None
