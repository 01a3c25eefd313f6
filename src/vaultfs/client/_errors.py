"""The one place where HTTP answers and httpx exceptions become ``vaultfs.errors``.

* ``error_from_response``: a response that is not a success (a ``FAILURE``/``EXCEPTION``
  envelope, or a non-2xx status without one) -> the exception to raise, or None.
* ``transport_error``: an httpx request error -> ``VaultUnavailable`` naming the method
  and path (never a header, so never the session id), chained to the httpx error.
* ``surely_not_sent``: whether such an error proves the request never left this host,
  which is what makes re-sending a create safe.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from vaultfs.errors import (
    ApiLimitExceeded,
    ServerException,
    VaultError,
    VaultUnavailable,
    error_for_type,
)

__all__ = [
    "error_from_response",
    "parse_json",
    "retry_after_seconds",
    "surely_not_sent",
    "transport_error",
]

#: Envelope statuses that mean the call was done (WARNING: bulk calls with row errors).
_DONE = frozenset({"SUCCESS", "WARNING"})

#: httpx errors raised before a single byte of the request was written.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)


def parse_json(response: httpx.Response) -> Any:
    """The JSON body of a read response, or None when it is not JSON."""
    try:
        return json.loads(response.content)
    except ValueError:
        return None


def error_from_response(response: httpx.Response, body: Any, what: str) -> VaultError | None:
    """The error a read response stands for, or None for a successful answer.

    ``body`` is ``parse_json(response)``; ``what`` is ``"<METHOD> <path>"`` for messages
    about answers without an envelope.
    """
    status = body.get("responseStatus") if isinstance(body, dict) else None
    if status in _DONE and response.is_success:
        return None
    code = response.status_code
    if isinstance(status, str) and status not in _DONE:
        err = _envelope_error(body, status)
    elif code == 429:
        err = ApiLimitExceeded(f"{what}: HTTP 429")
    elif code >= 500:
        err = ServerException(f"{what}: HTTP {code} without an envelope")
    elif response.is_success:
        # A 2xx that is not an envelope: the server (or something in between) answered
        # garbage; treat like an unreachable vault so idempotent calls are retried.
        err = VaultUnavailable(f"{what}: HTTP {code} without a JSON envelope")
    else:
        err = error_for_type("UNEXPECTED_ERROR", f"{what}: HTTP {code} without an envelope")
    # The status actually received (the class value is only the local vault's choice).
    err.http_status = code
    if isinstance(err, ApiLimitExceeded):
        err.retry_after = retry_after_seconds(response.headers.get("Retry-After"))
    return err


def _envelope_error(body: dict[str, Any], status: str) -> VaultError:
    errors = [e for e in body.get("errors") or [] if isinstance(e, dict)]
    first = errors[0] if errors else {}
    type_ = str(first.get("type") or status)
    message = str(first.get("message") or body.get("responseMessage") or type_)
    err = error_for_type(type_, message, errors or None)
    if status == "EXCEPTION" and type(err) is VaultError:
        # EXCEPTION is a system-level fault whatever its detail type says; keep the
        # detail in ``errors`` but make it a ServerException so it is retried.
        return ServerException(message, errors=errors or None)
    return err


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds from now (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def transport_error(exc: httpx.RequestError, what: str) -> VaultUnavailable:
    """``VaultUnavailable`` for an httpx error; raise it ``from exc``."""
    detail = str(exc) or type(exc).__name__
    return VaultUnavailable(f"{what}: {type(exc).__name__}: {detail}")


def surely_not_sent(exc: BaseException) -> bool:
    """True when ``exc`` comes from an httpx error raised before the request was sent."""
    return isinstance(exc, VaultUnavailable) and isinstance(exc.__cause__, _NOT_SENT)
