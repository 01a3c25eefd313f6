"""The response envelope: every JSON answer of the API, success or error.

``success(...)`` builds ``{"responseStatus": "SUCCESS", ...}``. ``error_response``
is the one table from exceptions to envelope and HTTP status: a ``VaultError`` of an
API type answers with its type and ``http_status``; a number too large for the
database (``OverflowError``) is ``INVALID_DATA``; anything else is an ``EXCEPTION``
(500) whose message never shows internals (the traceback goes to the log only), or,
for a POST, a FAILURE (``failure_for_unexpected``): a create never answers a 5xx.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.responses import Response

from vaultfs.errors import InvalidData, ServerException, VaultError, error_for_type

__all__ = [
    "JSON_MEDIA_TYPE",
    "error_response",
    "failure_for_unexpected",
    "is_api_type",
    "json_response",
    "success",
]

JSON_MEDIA_TYPE = "application/json;charset=UTF-8"
log = logging.getLogger("vaultfs.server")


def json_response(
    body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(data, status_code=status, media_type=JSON_MEDIA_TYPE, headers=headers)


def success(**fields: Any) -> Response:
    return json_response({"responseStatus": "SUCCESS", **fields})


def _status_for(exc: VaultError) -> str:
    return "EXCEPTION" if isinstance(exc, ServerException) else "FAILURE"


def is_api_type(type_: str) -> bool:
    """Whether ``type_`` is one of the API's error types (``vaultfs.errors``)."""
    return type(error_for_type(type_, "")) is not VaultError


def _as_api_error(exc: BaseException, method: str) -> VaultError:
    """``exc`` as an error of the API's types (only those ever reach a client)."""
    if isinstance(exc, VaultError) and is_api_type(exc.type):
        return exc
    if isinstance(exc, OverflowError):
        # An integer beyond the database's 64 bits names nothing that can exist.
        return InvalidData("A number in the request is out of range")
    if method == "POST":
        return failure_for_unexpected(exc)
    log.error("unexpected error", exc_info=exc)
    return ServerException("An unexpected error occurred on the server")


def error_response(exc: BaseException, method: str = "GET") -> Response:
    """The envelope for any exception (the one error table of the server)."""
    error = _as_api_error(exc, method)
    headers: dict[str, str] = {}
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, int(retry_after + 0.999)))
    body = {
        "responseStatus": _status_for(error),
        "responseMessage": error.message,
        "errors": error.errors,
    }
    return json_response(body, error.http_status, headers)


def failure_for_unexpected(exc: BaseException) -> VaultError:
    """What a create answers for an unexpected error: a FAILURE, never a 5xx.

    A client that saw a 5xx may retry the create and make a second document; the
    transaction rolled back, so a plain failure tells the truth: nothing was made.
    """
    log.error("unexpected error during a create (nothing was created)", exc_info=exc)
    return InvalidData("The request failed and changed nothing; it may be sent again")
