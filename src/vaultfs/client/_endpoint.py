"""What every endpoint group of ``VaultClient`` shares: the ``Http`` it calls through,
a plain GET, and a record returned at the top level of its response."""

from __future__ import annotations

from typing import Any

from ._http import Call, Http

__all__ = ["EndpointCalls", "record"]

#: Keys of the envelope itself, dropped from records returned whole.
_ENVELOPE_KEYS = frozenset({"responseStatus", "responseMessage", "errors"})


class EndpointCalls:
    _http: Http

    async def _get(self, template: str, **path_args: str | int) -> dict[str, Any]:
        return await self._http.call(Call("GET", template, path_args=path_args))


def record(body: dict[str, Any]) -> dict[str, Any]:
    """A record returned at the top level of its response, without the envelope keys."""
    return {k: v for k, v in body.items() if k not in _ENVELOPE_KEYS}
