"""The one retry policy of the client: which failures are retried, and how long to wait.

| failure                                   | idempotent call | call that creates |
|-------------------------------------------|-----------------|-------------------|
| connection refused / connect timeout      | retry           | retry             |
| other transport error, timeout, 5xx       | retry           | never (ambiguous) |
| ``API_LIMIT_EXCEEDED``                    | after the wait  | after the wait    |
| any other API error                       | never           | never             |

Waits grow exponentially with jitter; ``API_LIMIT_EXCEEDED`` waits for ``Retry-After``
(or a window-based default) and gives up at once when that is longer than
``max_limit_wait`` (a spent daily limit: the caller retries much later).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import trio

from vaultfs.errors import ApiLimitExceeded, ServerException, VaultError, VaultUnavailable

from ._errors import surely_not_sent

__all__ = ["Attempt", "RetryPolicy", "backoff", "retrying"]

log = logging.getLogger("vaultfs.client")

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    #: retries after the first attempt
    max_retries: int = 6
    #: first backoff (seconds); doubles per retry up to ``max_delay``
    base_delay: float = 0.5
    max_delay: float = 30.0
    #: first wait after API_LIMIT_EXCEEDED without Retry-After; doubles up to the window
    limit_delay: float = 15.0
    #: the burst window; also the longest Retry-After the client waits for
    max_limit_wait: float = 300.0


class Attempt:
    """One try of a call; the call sets ``sent`` just before its request goes out (so
    failures before that, such as a failed lazy login, are always safe to retry)."""

    def __init__(self) -> None:
        self.sent = False


async def retrying(
    call: Callable[[Attempt], Awaitable[T]],
    *,
    policy: RetryPolicy,
    rng: random.Random,
    idempotent: bool,
    what: str,
    max_retries: int | None = None,
) -> T:
    """Run ``call`` until it succeeds, a failure is not retryable, or retries run out
    (``max_retries``, when given, instead of the policy's: for calls a user waits on
    that must fail fast when the vault is away)."""
    retries = policy.max_retries if max_retries is None else max_retries
    retry = 0
    while True:
        attempt = Attempt()
        try:
            return await call(attempt)
        except VaultError as exc:
            may_resend = idempotent or not attempt.sent or surely_not_sent(exc)
            delay = _delay(exc, retry, policy, rng, may_resend=may_resend)
            if delay is None or retry >= retries:
                raise
            retry += 1
            log.warning(
                "%s failed (%s: %s); retry %d/%d in %.1fs",
                what,
                type(exc).__name__,
                exc.message,
                retry,
                retries,
                delay,
            )
        await trio.sleep(delay)


def _delay(
    exc: VaultError, retry: int, policy: RetryPolicy, rng: random.Random, *, may_resend: bool
) -> float | None:
    """Seconds to wait before retrying after ``exc``, or None when it must not be retried."""
    if isinstance(exc, ApiLimitExceeded):
        # The vault processed nothing, so any call may be sent again.
        if exc.retry_after is not None:
            if exc.retry_after > policy.max_limit_wait:
                return None
            return exc.retry_after + rng.uniform(0, 1)
        return backoff(policy.limit_delay, retry, policy.max_limit_wait, rng)
    transient = isinstance(exc, VaultUnavailable | ServerException) or exc.http_status >= 500
    if transient and may_resend:
        return backoff(policy.base_delay, retry, policy.max_delay, rng)
    return None


def backoff(base: float, retry: int, cap: float, rng: random.Random) -> float:
    """The one backoff of vaultfs (the client's retries, the spool's check-ins): the
    ``retry``-th wait (from 0) is exponential from ``base`` up to ``cap``, with "equal
    jitter": half fixed, half random, so that parallel callers spread out but every
    wait still grows."""
    ceiling = min(cap, base * 2**retry)
    return ceiling / 2 + rng.uniform(0, ceiling / 2)
