"""The response envelope: every JSON answer of the API, success or error.

``success(...)`` builds ``{"responseStatus": "SUCCESS", ...}``. ``error_response``
is the one table from exceptions to envelope and HTTP status: a ``VaultError``
answers with its type and ``http_status``; anything else is an ``EXCEPTION`` (500)
whose message never shows internals (the traceback goes to the log only).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.responses import Response

from vaultfs.errors import ServerException, VaultError

__all__ = [
    "JSON_MEDIA_TYPE",
    "error_response",
    "failure_for_unexpected",
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


def error_response(exc: BaseException) -> Response:
    """The envelope for any exception (the one error table of the server)."""
    if not isinstance(exc, VaultError):
        log.error("unexpected error", exc_info=exc)
        exc = ServerException("An unexpected error occurred on the server")
    headers: dict[str, str] = {}
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, int(retry_after + 0.999)))
    body = {
        "responseStatus": _status_for(exc),
        "responseMessage": exc.message,
        "errors": exc.errors,
    }
    return json_response(body, exc.http_status, headers)


def failure_for_unexpected(exc: BaseException) -> VaultError:
    """What a create answers for an unexpected error: a FAILURE, never a 5xx.

    A client that saw a 5xx may retry the create and make a second document; the
    transaction rolled back, so a plain failure tells the truth: nothing was made.
    """
    log.error("unexpected error during a create (nothing was created)", exc_info=exc)
    return VaultError("The request failed and changed nothing; it may be sent again")
