"""Helpers shared by the route modules: the caller, parameters, URLs, forms, versions.

Version gating: wrap an endpoint in ``since(versions.X)`` to make it answer
``MALFORMED_URL`` (like an unknown path) when called under an API version older than
the one that introduced it, e.g. ``Route(path, since(versions.EVENTS)(list_events))``.
A parameter introduced later is ignored under older versions (an older server does
not know it): ``if version_at_least(request, versions.LOCK_ON_DOWNLOAD): ...``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping

from starlette.requests import Request
from starlette.responses import Response

from vaultfs.errors import InvalidData, InvalidDocument, MalformedUrl, VaultError
from vaultfs.wire import API_VERSION, MAX_FILE_SIZE

from .. import versions
from ..permissions import Permission, require
from ..state import VaultState
from ..storage.users import SessionUser
from ..uploads import Form, read_form

__all__ = [
    "CALLER_KEY",
    "EXTRA_HEADERS_KEY",
    "MAX_ID",
    "add_header",
    "api_url",
    "base_url",
    "bool_param",
    "caller",
    "check_numbers",
    "form",
    "parse_count",
    "path_int",
    "query",
    "since",
    "state",
    "vault_url",
    "version_at_least",
    "version_path",
]

#: Where the middleware puts the authenticated caller in the ASGI scope.
CALLER_KEY = "vaultfs.caller"
#: Headers a route wants on its answer whether it succeeds or fails (the middleware
#: adds them; a list of (name, value) in the ASGI scope).
EXTRA_HEADERS_KEY = "vaultfs.extra_headers"

Endpoint = Callable[[Request], Awaitable[Response]]


def state(request: Request) -> VaultState:
    vault: VaultState = request.app.state.vault
    return vault


def caller(request: Request, permission: Permission = Permission.VIEW) -> SessionUser:
    """The session's user, after checking they may do ``permission``."""
    who: SessionUser = request.scope[CALLER_KEY]
    require(who, permission)
    return who


def add_header(request: Request, name: str, value: str) -> None:
    """Put a header on the answer to ``request``, success or error envelope alike."""
    request.scope.setdefault(EXTRA_HEADERS_KEY, []).append((name, value))


def query(request: Request, name: str) -> str | None:
    """A query parameter; empty values count as absent."""
    value = request.query_params.get(name)
    return value if value else None


def bool_param(value: str | None, name: str) -> bool:
    if value is None:
        return False
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise InvalidData(f"Invalid value for [{name}]: '{value}' (true or false)")
    return lowered == "true"


#: The largest id or number the database holds (a signed 64-bit integer). A larger
#: one names nothing that exists, and must never reach SQL (it cannot be bound).
MAX_ID = 2**63 - 1
_SIGNED = re.compile(r"[+-]?[0-9]+")
#: What a path number that cannot exist answers: a document or version that does not
#: exist is INVALID_DOCUMENT; anything else on a document (attachment, relationship,
#: group, ...) MALFORMED_URL, as the spec says of attachments.
_ABSENT: dict[str, type[VaultError]] = {
    "doc_id": InvalidDocument,
    "major": InvalidDocument,
    "minor": InvalidDocument,
}


def parse_count(text: str) -> int | None:
    """A non-negative integer in ASCII digits, or None when ``text`` is not one.

    Values above ``MAX_ID`` come back as ``MAX_ID + 1`` (never converted whole: a
    string of thousands of digits is not worth the work, and Python refuses it).
    """
    digits = text.strip().removeprefix("+")
    if not (digits.isascii() and digits.isdigit()):
        return None
    digits = digits.lstrip("0") or "0"
    return MAX_ID + 1 if len(digits) > 19 else min(int(digits), MAX_ID + 1)


def check_numbers(fields: Mapping[str, str], names: Iterable[str]) -> None:
    """``INVALID_DATA`` naming the first of ``names`` whose value (or one item of its
    comma-separated list) is a number beyond 64 bits: no record has it, and it must
    not reach SQL."""
    for name in names:
        for item in fields.get(name, "").split(","):
            value = parse_count(item)
            if value is not None and value > MAX_ID:
                raise InvalidData(f"Invalid value for [{name}]: '{item.strip()[:40]}' is too large")


def path_int(request: Request, name: str, what: str | None = None) -> int:
    """A number of the path: ``MALFORMED_URL`` when it is none, the "does not exist"
    error of its kind when it is one no record can have (negative, beyond 64 bits)."""
    text = request.path_params[name]
    shown = text if len(text) <= 40 else text[:40] + "..."
    if not _SIGNED.fullmatch(text):
        raise MalformedUrl(f"Invalid {what or name} [{shown}]: not a number")
    value = None if text.startswith("-") else parse_count(text)
    if value is None or value > MAX_ID:
        raise _ABSENT.get(name, MalformedUrl)(f"No such {what or name} [{shown}]")
    return value


def version_path(request: Request) -> tuple[int, int]:
    return (
        path_int(request, "major", "major version number"),
        path_int(request, "minor", "minor version number"),
    )


def version_at_least(request: Request, since_label: str) -> bool:
    """Whether the request's API version has a feature introduced in ``since_label``."""
    return versions.at_least(request.path_params.get("version", API_VERSION), since_label)


def since(label: str) -> Callable[[Endpoint], Endpoint]:
    """Gate an endpoint: under API versions before ``label`` it does not exist."""

    def wrap(endpoint: Endpoint) -> Endpoint:
        @functools.wraps(endpoint)
        async def gated(request: Request) -> Response:
            version = request.path_params.get("version", API_VERSION)
            if not versions.at_least(version, label):
                raise MalformedUrl(
                    f"The resource [{request.url.path}] does not exist in API {version}"
                    f" (available from {label})"
                )
            return await endpoint(request)

        return gated

    return wrap


def base_url(request: Request) -> str:
    """scheme://host as the client addressed the server (URLs in responses are absolute)."""
    return f"{request.url.scheme}://{request.url.netloc}"


def api_url(request: Request, path: str) -> str:
    version = request.path_params.get("version", API_VERSION)
    return f"{base_url(request)}/api/{version}{path}"


def vault_url(request: Request, vault_id: int, dns: str) -> str:
    """``{scheme}://{host}/api`` of a vault: the address the client used when it
    addressed that vault (by its DNS name or as the default vault), else the vault's
    DNS name on this server's port."""
    if state(request).host_vault(request.url.hostname or "") == vault_id:
        return f"{base_url(request)}/api"
    port = f":{request.url.port}" if request.url.port else ""
    return f"{request.url.scheme}://{dns}{port}/api"


async def form(
    request: Request,
    *,
    files: frozenset[str] = frozenset(),
    max_file_size: int = MAX_FILE_SIZE,
    with_text: bool = False,
) -> Form:
    """The request's form body (multipart files go to the content store as they
    arrive; ``with_text``: their searchable text is extracted on the way)."""
    return await read_form(
        request,
        state(request).blobs,
        max_file_size=max_file_size,
        file_fields=files,
        with_text=with_text,
    )
