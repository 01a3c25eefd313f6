"""How the spool reads a failed upload: for good, not processed, or worth a retry.

Shared by the drafts (``spool``) and the renditions and attachments (``uploads``), so
that both treat every answer of the vault alike.
"""

from __future__ import annotations

import random
from typing import Protocol

import trio

from vaultfs.client import RetryPolicy
from vaultfs.errors import (
    ApiLimitExceeded,
    InsufficientAccess,
    InvalidData,
    InvalidDocument,
    InvalidSessionId,
    MalformedUrl,
    MethodNotSupported,
    ParameterRequired,
    VaultError,
)

__all__ = ["NOT_PROCESSED", "PERMANENT", "Retried", "describe", "retry_delay", "schedule_retry"]

#: Refusals that retrying cannot cure: the content goes to lost+found.
PERMANENT: tuple[type[VaultError], ...] = (
    InvalidDocument,
    InsufficientAccess,
    InvalidData,
    ParameterRequired,
    MalformedUrl,
    MethodNotSupported,
)
#: Failures of which the vault says the request was not processed at all (the
#: client re-logs in on INVALID_SESSION_ID itself; one that surfaces was refused).
NOT_PROCESSED: tuple[type[VaultError], ...] = (ApiLimitExceeded, InvalidSessionId)


def describe(exc: BaseException) -> str:
    """For records and log lines: the vault's error type (or the exception's class)
    and its message."""
    kind = exc.type if isinstance(exc, VaultError) else type(exc).__name__
    return f"{kind}: {exc}"


def retry_delay(
    exc: BaseException, failures: int, policy: RetryPolicy, rng: random.Random
) -> float:
    """Seconds before the next try after the ``failures``-th failure in a row, ``exc``:
    the policy's wait (the one backoff, or longer when the vault said when to come
    back)."""
    return policy.wait(failures - 1, rng, exc)


class Retried(Protocol):
    """An entry the worker tries again: a draft's or an upload's."""

    failures: int
    #: trio time of the next try
    next_attempt: float


def schedule_retry(
    entry: Retried, exc: BaseException, policy: RetryPolicy, rng: random.Random
) -> float:
    """Count ``exc`` as the entry's next failure in a row and set when it is tried
    again under ``policy`` (``CHECK_INS``, as the mount sets it); returns the delay.
    The worker waits for that time or anything that wakes it (``flush_now``, a
    reopen): a wait no retry loop could be interrupted in."""
    entry.failures += 1
    delay = retry_delay(exc, entry.failures, policy, rng)
    entry.next_attempt = trio.current_time() + delay
    return delay
