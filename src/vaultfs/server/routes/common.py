"""Helpers shared by the route modules: the caller, parameters, URLs, forms."""

from __future__ import annotations

import re

from starlette.requests import Request

from vaultfs.errors import InvalidData, MalformedUrl
from vaultfs.wire import MAX_FILE_SIZE

from ..permissions import Permission, require
from ..state import VaultState
from ..storage.users import SessionUser
from ..uploads import Form, read_form

__all__ = [
    "CALLER_KEY",
    "api_url",
    "base_url",
    "bool_param",
    "caller",
    "form",
    "is_version_label",
    "path_int",
    "query",
    "state",
    "version_path",
]

#: Where the middleware puts the authenticated caller in the ASGI scope.
CALLER_KEY = "vaultfs.caller"
_VERSION = re.compile(r"^v\d+\.\d+$")


def state(request: Request) -> VaultState:
    vault: VaultState = request.app.state.vault
    return vault


def caller(request: Request, permission: Permission = Permission.VIEW) -> SessionUser:
    """The session's user, after checking they may do ``permission``."""
    who: SessionUser = request.scope[CALLER_KEY]
    require(who, permission)
    return who


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


def path_int(request: Request, name: str, what: str | None = None) -> int:
    text = request.path_params[name]
    if not (text.isascii() and text.isdigit()):
        raise MalformedUrl(f"Invalid {what or name} [{text}]: not a number")
    return int(text)


def version_path(request: Request) -> tuple[int, int]:
    return (
        path_int(request, "major", "major version number"),
        path_int(request, "minor", "minor version number"),
    )


def is_version_label(label: str) -> bool:
    return bool(_VERSION.match(label))


def base_url(request: Request) -> str:
    """scheme://host as the client addressed the server (URLs in responses are absolute)."""
    return f"{request.url.scheme}://{request.url.netloc}"


def api_url(request: Request, path: str) -> str:
    version = request.path_params.get("version", "v25.1")
    return f"{base_url(request)}/api/{version}{path}"


async def form(
    request: Request, *, files: frozenset[str] = frozenset(), max_file_size: int = MAX_FILE_SIZE
) -> Form:
    """The request's form body (multipart files go to the blob store as they arrive)."""
    return await read_form(
        request, state(request).blobs, max_file_size=max_file_size, file_fields=files
    )
