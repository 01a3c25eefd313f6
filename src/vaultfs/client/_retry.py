"""The one retry helper of vaultfs, with its named policies; and the client's rule of
which failures are retried.

Every loop that retries runs in ``retrying`` (a try, a failure, a wait, the next try)
under one of the policies named here, or, where a worker waits for an entry's next try
while anything else may wake it (the spool's check-ins and uploads), takes its waits
from the policy (``RetryPolicy.wait``):

| policy      | tries              | waits        | used by                                      |
|-------------|--------------------|--------------|----------------------------------------------|
| `REQUESTS`  | 1 + 6 (`retries`)  | 0.5 s → 30 s | every call of the client                     |
| `LOCKS`     | 1 + 3              | 0.5 s → 30 s | taking a lock (an open() waits for it)       |
| `WAITED_ON` | 1 + 3              | 0.5 s → 30 s | a field's PUT (a setfattr, a rename waits)   |
| `CREATES`   | 8                  | 0.5 s → 30 s | a create, its marker looked for first        |
| `CHECK_INS` | for ever           | 1 s → 300 s  | drafts, uploads, locks left by a dead daemon |
| `RECONNECTS`| for ever           | 1 s → 60 s   | probing a vault that could not be reached    |

The client's rule:

| failure                                   | idempotent call | call that creates |
|-------------------------------------------|-----------------|-------------------|
| connection refused / connect timeout      | retry           | retry             |
| other transport error, timeout, 5xx       | retry           | never (ambiguous) |
| the vault offline (``VaultOffline``)      | never           | never             |
| ``API_LIMIT_EXCEEDED``                    | after the wait  | after the wait    |
| any other API error                       | never           | never             |

Waits grow exponentially with jitter; ``API_LIMIT_EXCEEDED`` waits for ``Retry-After``
(or a window-based default) and gives up at once when that is longer than
``max_limit_wait`` (a spent daily limit: the caller retries much later).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import trio

from vaultfs.errors import (
    ApiLimitExceeded,
    ServerException,
    VaultError,
    VaultOffline,
    VaultUnavailable,
)

from ._errors import surely_not_sent

__all__ = [
    "CHECK_INS",
    "CREATES",
    "LOCKS",
    "RECONNECTS",
    "REQUESTS",
    "WAITED_ON",
    "Attempt",
    "RetryPolicy",
    "backoff",
    "retrying",
]

log = logging.getLogger("vaultfs.client")

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    #: retries after the first attempt (None: for ever)
    max_retries: int | None = 6
    #: first backoff (seconds); doubles per retry up to ``max_delay``
    base_delay: float = 0.5
    max_delay: float = 30.0
    #: first wait after API_LIMIT_EXCEEDED without Retry-After; doubles up to the window
    limit_delay: float = 15.0
    #: the burst window; also the longest Retry-After the client waits for
    max_limit_wait: float = 300.0
    #: what the log calls it
    name: str = "requests"

    def wait(self, retry: int, rng: random.Random, exc: BaseException | None = None) -> float:
        """The ``retry``-th wait (from 0): the backoff, or longer when the vault said
        when to come back (``Retry-After``, up to ``max_limit_wait``)."""
        delay = backoff(self.base_delay, retry, self.max_delay, rng)
        if isinstance(exc, ApiLimitExceeded) and exc.retry_after:
            delay = max(delay, min(exc.retry_after, self.max_limit_wait))
        return delay


#: Every call of the client (its ``retries`` setting replaces ``max_retries``).
REQUESTS = RetryPolicy(name="requests")
#: Taking a lock: an open() waits for it, about 3.5 s of backoff at most.
LOCKS = RetryPolicy(max_retries=3, name="locks")
#: A change of fields a program waits on (setfattr, a directory's rename): about 3.5 s
#: of backoff at most; a field set the vault is away for then waits in the spool's
#: queue (``CHECK_INS``).
WAITED_ON = RetryPolicy(max_retries=3, name="waited-on")
#: A create whose answer may be lost: 8 tries, each after finding that the earlier
#: one left nothing.
CREATES = RetryPolicy(max_retries=7, max_limit_wait=30.0, name="creates")
#: The spool's background work (drafts, uploads, unlocks left by an earlier daemon):
#: for ever, slower, as the vault may be away for hours.
CHECK_INS = RetryPolicy(
    max_retries=None, base_delay=1.0, max_delay=300.0, max_limit_wait=math.inf, name="check-ins"
)

#: Probing a vault that could not be reached (``_reach``): for ever, at most a minute
#: apart, so a vault back after a long absence is found within a minute and a vault
#: away for a day costs about 1,400 probes of its unversioned ``GET /api/``.
RECONNECTS = RetryPolicy(max_retries=None, base_delay=1.0, max_delay=60.0, name="reconnects")


class Attempt:
    """One try of a call; the call sets ``sent`` just before its request goes out (so
    failures before that, such as a failed lazy login, are always safe to retry).
    ``retry`` counts the tries before this one."""

    def __init__(self, retry: int = 0) -> None:
        self.sent = False
        self.retry = retry


async def retrying(
    call: Callable[[Attempt], Awaitable[T]],
    *,
    policy: RetryPolicy,
    rng: random.Random,
    idempotent: bool = True,
    what: str,
    max_retries: int | None = None,
    retryable: Callable[[VaultError], bool] | None = None,
) -> T:
    """The one retry loop: run ``call`` until it succeeds, a failure is not retryable,
    or retries run out (``max_retries``, when given, instead of the policy's: for
    calls a user waits on that must fail fast when the vault is away).

    Which failures are retried is the client's rule (see above) unless ``retryable``
    says (then waits are the policy's ``wait``)."""
    retries = policy.max_retries if max_retries is None else max_retries
    retry = 0
    while True:
        attempt = Attempt(retry)
        try:
            return await call(attempt)
        except VaultError as exc:
            if retryable is not None:
                delay = policy.wait(retry, rng, exc) if retryable(exc) else None
            else:
                may_resend = idempotent or not attempt.sent or surely_not_sent(exc)
                delay = _delay(exc, retry, policy, rng, may_resend=may_resend)
            if delay is None or (retries is not None and retry >= retries):
                raise
            retry += 1
            log.warning(
                "%s failed (%s: %s); retry %d%s in %.1fs (%s)",
                what,
                type(exc).__name__,
                exc.message,
                retry,
                "" if retries is None else f"/{retries}",
                delay,
                policy.name,
            )
        await trio.sleep(delay)


def _delay(
    exc: VaultError, retry: int, policy: RetryPolicy, rng: random.Random, *, may_resend: bool
) -> float | None:
    """Seconds to wait before retrying after ``exc``, or None when it must not be retried."""
    if isinstance(exc, VaultOffline):
        return None  # not sent: the vault is offline, and a retry would not be either
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
