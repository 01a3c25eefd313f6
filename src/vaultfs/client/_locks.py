"""Lock endpoints of ``VaultClient``: checking a document out, asking who holds it,
checking it in.

Owns which method and path each of these calls sends and which part of the answer it
returns; ``VaultClient`` inherits them.
"""

from __future__ import annotations

from typing import Any

from ._endpoint import EndpointCalls
from ._http import Call
from ._retry import LOCKS

__all__ = ["LockCalls"]

_LOCK = "/objects/documents/{id}/lock"


class LockCalls(EndpointCalls):
    async def lock(self, doc_id: int) -> None:
        """Check the document out. Raises ``InvalidData``/``InsufficientAccess`` as the
        vault says when another user holds it (the bridge turns that into EBUSY after
        ``get_lock``)."""
        # Retried like an idempotent call: a resend after a lost answer to a lock that
        # was taken fails as "already locked", and the caller then asks ``get_lock``,
        # which says the lock is ours. Not retrying would fail an open() on one blip;
        # retrying long would hang it while the vault is away (the ``LOCKS`` policy).
        await self._http.call(
            Call(
                "POST",
                _LOCK,
                path_args={"id": doc_id},
                idempotent=True,
                max_retries=LOCKS.max_retries,
            )
        )

    async def get_lock(self, doc_id: int) -> dict[str, Any] | None:
        """The ``lock`` object ({locked_by__v, locked_date__v}) or None. Retried as a
        lock is (``LOCKS``): a check-out looks first, and an open() waits for it."""
        body = await self._http.call(
            Call("GET", _LOCK, path_args={"id": doc_id}, max_retries=LOCKS.max_retries)
        )
        lock = body.get("lock")
        return dict(lock) if isinstance(lock, dict) and lock.get("locked_by__v") else None

    async def unlock(self, doc_id: int) -> None:
        await self._http.call(Call("DELETE", _LOCK, path_args={"id": doc_id}))
