"""Unit tests: the retry policy (backoff on 5xx, never resending an ambiguous create,
waiting out API_LIMIT_EXCEEDED). Trio's autojump clock makes the waits instant."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import trio

from vaultfs.client import CHECK_INS, CREATES, LOCKS, REQUESTS, Attempt, retrying
from vaultfs.errors import ApiLimitExceeded, InvalidData, ServerException, VaultUnavailable

from .mockvault import MockVault, envelope, failure


def _flaky(*answers: Callable[[httpx.Request], httpx.Response]):
    """A handler answering with ``answers`` in turn, then with the last one."""
    calls = iter(answers)
    last = answers[-1]

    def handle(request: httpx.Request) -> httpx.Response:
        return next(calls, last)(request)

    return handle


def _http(status: int) -> Callable[[httpx.Request], httpx.Response]:
    return lambda r: httpx.Response(status, text="upstream trouble")


def _raise(exc_type: type[httpx.TransportError]) -> Callable[[httpx.Request], httpx.Response]:
    def handle(request: httpx.Request) -> httpx.Response:
        raise exc_type("network trouble", request=request)

    return handle


def _created(request: httpx.Request) -> httpx.Response:
    return envelope(id=99)


async def test_get_is_retried_with_growing_backoff_on_5xx(autojump_clock: object) -> None:
    vault = MockVault()
    seen: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(trio.current_time())
        return httpx.Response(503) if len(seen) < 4 else envelope(document={"id": 1})

    vault.routes["GET /objects/documents/1"] = handle
    async with vault.client() as client:
        body = await client.get_document(1)
    assert body["document"] == {"id": 1}
    gaps = [b - a for a, b in itertools.pairwise(seen)]
    assert len(gaps) == 3
    # Equal jitter: each wait is between half and all of 0.5 s * 2**n.
    for n, gap in enumerate(gaps):
        assert 0.25 * 2**n <= gap <= 0.5 * 2**n + 0.01


async def test_retries_are_bounded(autojump_clock: object) -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/1"] = _http(500)
    async with vault.client(max_retries=3) as client:
        with pytest.raises(ServerException):
            await client.get_document(1)
    assert vault.count("GET /objects/documents/1") == 4


async def test_get_is_retried_after_a_timeout(autojump_clock: object) -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/1"] = _flaky(
        _raise(httpx.ReadTimeout), lambda r: envelope(document={"id": 1})
    )
    async with vault.client() as client:
        assert (await client.get_document(1))["document"]["id"] == 1
    assert vault.count("GET /objects/documents/1") == 2


async def test_api_errors_are_not_retried(autojump_clock: object) -> None:
    vault = MockVault()
    vault.routes["PUT /objects/documents/1"] = lambda r: failure("INVALID_DATA", "bad value")
    async with vault.client() as client:
        with pytest.raises(InvalidData):
            await client.update_document(1, {"title__v": "x"})
    assert vault.count("PUT /objects/documents/1") == 1


@pytest.mark.parametrize(
    "ambiguous", [_http(500), _http(502), _raise(httpx.ReadTimeout), _raise(httpx.ReadError)]
)
async def test_create_is_never_resent_after_an_ambiguous_failure(
    ambiguous: Callable[[httpx.Request], httpx.Response], autojump_clock: object
) -> None:
    vault = MockVault()
    vault.routes["POST /objects/documents"] = _flaky(ambiguous, _created)
    async with vault.client() as client:
        with pytest.raises((ServerException, VaultUnavailable)):
            await client.create_document({"name__v": "x"}, None)
    assert vault.count("POST /objects/documents") == 1


async def test_draft_is_never_resent_after_an_ambiguous_failure(
    tmp_path: Path, autojump_clock: object
) -> None:
    vault = MockVault()
    vault.routes["POST /objects/documents/1"] = _flaky(
        _raise(httpx.WriteError),
        lambda r: envelope(major_version_number__v=0, minor_version_number__v=2),
    )
    (tmp_path / "a.txt").write_bytes(b"content")
    async with vault.client() as client:
        with pytest.raises(VaultUnavailable):
            await client.create_draft(1, tmp_path / "a.txt")
    assert vault.count("POST /objects/documents/1") == 1


async def test_create_is_resent_when_the_connection_was_refused(autojump_clock: object) -> None:
    vault = MockVault()
    vault.routes["POST /objects/documents"] = _flaky(_raise(httpx.ConnectError), _created)
    async with vault.client() as client:
        assert await client.create_document({"name__v": "x"}, None) == 99
    assert vault.count("POST /objects/documents") == 2


async def test_create_is_sent_after_a_failed_lazy_login(autojump_clock: object) -> None:
    # The login failing does not make the create ambiguous: it was never sent.
    vault = MockVault()
    vault.routes["POST /objects/documents"] = _created
    answers = iter([httpx.Response(503)])

    async def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/auth"):
            early = next(answers, None)
            if early is not None:
                vault.requests.append(request)
                return early
        return await vault.handle(request)

    async with vault.client(transport=httpx.MockTransport(handle)) as client:
        assert await client.create_document({"name__v": "x"}, None) == 99
    assert vault.count("POST /auth") == 2
    assert vault.count("POST /objects/documents") == 1


async def test_limit_exceeded_waits_for_retry_after_then_succeeds(autojump_clock: object) -> None:
    vault = MockVault()
    limited = failure(
        "API_LIMIT_EXCEEDED", "burst limit", status=429, headers={"Retry-After": "42"}
    )
    seen: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(trio.current_time())
        return limited if len(seen) == 1 else envelope(id=99)

    vault.routes["POST /objects/documents"] = handle
    async with vault.client() as client:
        # Even a create: the vault processed nothing.
        assert await client.create_document({"name__v": "x"}, None) == 99
    assert 42 <= seen[1] - seen[0] <= 43.01


async def test_limit_exceeded_without_retry_after_waits_a_window_share(
    autojump_clock: object,
) -> None:
    vault = MockVault()
    seen: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(trio.current_time())
        return failure("API_LIMIT_EXCEEDED", status=429) if len(seen) == 1 else envelope(types=[])

    vault.routes["GET /metadata/objects/documents/types"] = handle
    async with vault.client() as client:
        assert await client.document_types() == []
    assert 7.5 <= seen[1] - seen[0] <= 15.01


async def test_limit_exceeded_for_longer_than_the_window_raises(autojump_clock: object) -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/1"] = lambda r: failure(
        "API_LIMIT_EXCEEDED", "daily limit", status=429, headers={"Retry-After": "3600"}
    )
    async with vault.client() as client:
        with pytest.raises(ApiLimitExceeded) as info:
            await client.get_document(1)
    assert info.value.retry_after == 3600
    assert vault.count("GET /objects/documents/1") == 1


# --- the one retry loop under the named policies ------------------------------------


async def test_a_loop_retries_as_its_named_policy_says(autojump_clock: object) -> None:
    tries: list[tuple[int, float]] = []

    async def call(attempt: Attempt) -> None:
        tries.append((attempt.retry, trio.current_time()))
        raise VaultUnavailable("away")

    with pytest.raises(VaultUnavailable):
        await retrying(
            call, policy=CREATES, rng=random.Random(1), what="x", retryable=lambda e: True
        )
    assert [retry for retry, _ in tries] == list(range((CREATES.max_retries or 0) + 1))
    waits = [b - a for (_, a), (_, b) in itertools.pairwise(tries)]
    for retry, wait in enumerate(waits):
        ceiling = min(CREATES.max_delay, CREATES.base_delay * 2**retry)
        assert ceiling / 2 <= wait <= ceiling


async def test_a_failure_the_loop_may_not_retry_is_raised_at_once(autojump_clock: object) -> None:
    tries = 0

    async def call(attempt: Attempt) -> None:
        nonlocal tries
        tries += 1
        raise InvalidData("no")

    with pytest.raises(InvalidData):
        await retrying(
            call, policy=CHECK_INS, rng=random.Random(1), what="x", retryable=lambda e: False
        )
    assert tries == 1


def test_the_policies_are_named_in_one_place() -> None:
    assert [p.name for p in (REQUESTS, LOCKS, CREATES, CHECK_INS)] == [
        "requests",
        "locks",
        "creates",
        "check-ins",
    ]
    assert CHECK_INS.max_retries is None  # the spool's background work never gives up
    limit = ApiLimitExceeded("spent", retry_after=3600.0)
    assert CHECK_INS.wait(0, random.Random(1), limit) == 3600.0  # waits what the vault says
    assert CREATES.wait(0, random.Random(1), limit) <= CREATES.max_limit_wait  # close() waits
