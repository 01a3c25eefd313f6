"""How the spool reads a failed upload: for good, not processed, or worth a retry.

Shared by the drafts (``spool``) and the renditions and attachments (``uploads``), so
that both treat every answer of the vault alike.
"""

from __future__ import annotations

import random

from vaultfs.client import backoff
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

__all__ = ["NOT_PROCESSED", "PERMANENT", "describe", "retry_delay"]

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
    exc: BaseException, failures: int, initial: float, maximum: float, rng: random.Random
) -> float:
    """Seconds before the next try after the ``failures``-th failure in a row, ``exc``:
    the one backoff, or longer when the vault said when to come back."""
    delay = backoff(initial, failures - 1, maximum, rng)
    if isinstance(exc, ApiLimitExceeded) and exc.retry_after:
        delay = max(delay, exc.retry_after)
    return delay
