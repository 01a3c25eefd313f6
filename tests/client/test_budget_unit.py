"""Unit tests: the budget counts every request and paces calls before the burst limit."""

from __future__ import annotations

import itertools

import httpx
import trio

from vaultfs.wire import BURST_REMAINING_HEADER, DAILY_REMAINING_HEADER

from .mockvault import MockVault, envelope


def _limits(burst: int, daily: int = 90_000) -> dict[str, str]:
    return {BURST_REMAINING_HEADER: str(burst), DAILY_REMAINING_HEADER: str(daily)}


async def test_budget_records_headers_and_counts_calls_per_endpoint() -> None:
    vault = MockVault()
    remaining = iter(range(1999, 0, -1))

    def handle(request: httpx.Request) -> httpx.Response:
        burst = next(remaining)
        return envelope(headers=_limits(burst, 50_000 + burst), document={}, versions=[])

    vault.routes["GET /objects/documents/1"] = handle
    vault.routes["GET /objects/documents/2"] = handle
    vault.routes["GET /objects/documents/2/versions"] = handle
    async with vault.client() as client:
        assert client.budget.burst_remaining is None and client.budget.calls == 0
        await client.get_document(1)
        await client.get_document(2)
        await client.list_versions(2)
        budget = client.budget
        assert budget.burst_remaining == 1997 and budget.daily_remaining == 51_997
        assert budget.calls == 4  # the login counts too
        assert budget.by_endpoint == {
            "POST /auth": 1,
            "GET /objects/documents/{id}": 2,
            "GET /objects/documents/{id}/versions": 1,
        }
    assert budget.by_endpoint["DELETE /session"] == 1


async def test_retries_and_relogins_are_counted(autojump_clock: object) -> None:
    vault = MockVault()
    answers = iter([httpx.Response(503)])
    vault.routes["GET /objects/documents/1"] = lambda r: next(answers, envelope(document={}))
    async with vault.client() as client:
        await client.get_document(1)
        vault.expire_sessions()
        await client.get_document(1)
        assert client.budget.by_endpoint == {"POST /auth": 2, "GET /objects/documents/{id}": 4}
        assert client.budget.calls == 6


async def test_calls_are_paced_when_the_burst_budget_runs_low(autojump_clock: object) -> None:
    vault = MockVault()
    remaining = iter([2000, 1500, 30, 10, 5, 4, 3])
    seen: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(trio.current_time())
        return envelope(headers=_limits(next(remaining)), document={})

    vault.routes["GET /objects/documents/1"] = handle
    async with vault.client() as client:
        for _ in range(7):
            await client.get_document(1)
    gaps = [b - a for a, b in itertools.pairwise(seen)]
    # 2000 and 1500 left: the next calls go at once. From 30 left (below 2% of the 2000
    # seen) on, each call first waits the rate the limit sustains: 300 s / 2000.
    assert gaps[:2] == [0, 0]
    assert all(abs(gap - 0.15) < 1e-6 for gap in gaps[2:]), gaps


async def test_paced_parallel_callers_go_one_at_a_time(autojump_clock: object) -> None:
    vault = MockVault()
    seen: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(trio.current_time())
        return envelope(headers=_limits(2000 if not seen[1:] else 5), document={})

    vault.routes["GET /objects/documents/1"] = handle
    async with vault.client() as client:
        await client.get_document(1)
        await client.get_document(1)  # now 5 remain of a seen 2000
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(client.get_document, 1)
    assert trio.current_time() - start >= 4 * 0.15 - 1e-6
