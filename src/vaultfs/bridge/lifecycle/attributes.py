"""The extended attributes of a document's life, on its directory and latest source file.

| name | get | set |
|---|---|---|
| ``user.vault.actions`` | JSON: actions offered now, requirements met or not | EPERM (no call) |
| ``user.vault.action`` | ENODATA | starts the action (a name, or JSON with params) |
| ``user.vault.event`` | ENODATA | logs the event (JSON of its fields) |
| ``user.vault.last_error`` | JSON: the last refusal of an action or event here | EPERM |
| ``user.vault.checkout`` | JSON: this client's check-out | ``1`` for a trip, ``0`` ends it |

None of them is listed by ``listxattr``: ``getfattr -d`` stays free of calls, and
``cp --preserve=xattr``, ``rsync -X`` and editors that copy attributes never carry
them (copying back the names they do carry is what ``write.fields`` makes harmless).
A refusal by the vault is logged with the names it concerns, kept for
``user.vault.last_error`` (so the ``vaultfs do``/``vaultfs event`` commands, which
only see an errno, can say why) and raised as it is: ``vaultfs.errors``' table maps
it (INVALID_DATA, PARAMETER_REQUIRED, METHOD_NOT_SUPPORTED to EINVAL,
INSUFFICIENT_ACCESS to EACCES, OPERATION_NOT_ALLOWED to EBUSY).
"""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime
from typing import Any, Protocol

from vaultfs import errors
from vaultfs.bridge.lifecycle.actions import LifecycleActions, parse_request
from vaultfs.bridge.lifecycle.events import DocumentEvents

__all__ = [
    "ACTION",
    "ACTIONS",
    "CHECKOUT",
    "EVENT",
    "LAST_ERROR",
    "NAMES",
    "LifeAttributes",
    "TripCheckouts",
]

log = logging.getLogger(__name__)

ACTIONS = "user.vault.actions"
ACTION = "user.vault.action"
EVENT = "user.vault.event"
LAST_ERROR = "user.vault.last_error"
#: a check-out for a trip (``vaultfs checkout``/``checkin``: docs/user-guide.md "Offline")
CHECKOUT = "user.vault.checkout"
NAMES = frozenset({ACTIONS, ACTION, EVENT, LAST_ERROR, CHECKOUT})
#: seconds a refusal stays readable in ``user.vault.last_error``
_KEEP_REFUSAL = 600.0


class TripCheckouts(Protocol):
    """This client's check-outs for a trip (``write.lease.Leases``, handed in)."""

    async def check_out_for_trip(self, doc_id: int) -> None: ...
    async def end_trip(self, doc_id: int) -> None: ...
    def checkout_of(self, doc_id: int) -> dict[str, Any]: ...


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


class LifeAttributes:
    def __init__(
        self,
        actions: LifecycleActions,
        events: DocumentEvents,
        trips: TripCheckouts | None = None,
    ) -> None:
        """``trips``: this client's check-outs (None: a read-only mount, none)."""
        self.actions = actions
        self.events = events
        self.trips = trips
        #: doc id -> (monotonic time, refusal record)
        self._refusals: dict[int, tuple[float, dict[str, Any]]] = {}

    @staticmethod
    def owns(name: str) -> bool:
        return name in NAMES

    async def get(self, doc_id: int | None, name: str) -> bytes:
        """getfattr ``name`` of a node that shows document ``doc_id``'s lifecycle
        (None: a node that shows none, ``NodeFamily.lifecycle_of``)."""
        if doc_id is None:
            raise errors.NoSuchAttribute(name)
        if name == ACTIONS:
            return _json(await self.actions.describe(doc_id))
        if name == CHECKOUT:
            if self.trips is None:
                return _json({"state": "free", "why": []})
            return _json(self.trips.checkout_of(doc_id))
        if name == LAST_ERROR:
            kept = self._refusals.get(doc_id)
            if kept is None or time.monotonic() - kept[0] > _KEEP_REFUSAL:
                raise errors.NoSuchAttribute(name)
            return _json(kept[1])
        raise errors.NoSuchAttribute(f"{name} can only be set")

    async def set(self, doc_id: int | None, name: str, value: bytes | None) -> None:
        if name in (ACTIONS, LAST_ERROR):
            # What getfattr shows, copied back by a program that preserves xattrs:
            # refused without a call, never taken for a field.
            raise errors.NotEditable(f"{name} is read-only")
        if doc_id is None:
            raise errors.Unsupported(f"{name} is on document directories and their files")
        if value is None:
            raise errors.NotEditable(f"{name} cannot be removed")
        if name == CHECKOUT:
            await self._trip(doc_id, value)
        elif name == ACTION:
            request = parse_request(value)
            what = f"lifecycle action {request.action}"
            try:
                await self.actions.start(doc_id, request)
            except errors.VaultError as exc:
                self._refused(doc_id, what, exc)
                raise
        else:
            try:
                await self.events.log(doc_id, value)
            except errors.VaultError as exc:
                self._refused(doc_id, "event", exc)
                raise
        self._refusals.pop(doc_id, None)

    async def _trip(self, doc_id: int, value: bytes) -> None:
        """Check the document out for a trip (``1``), or end that (``0``): the vault's
        check-out, held across unmounts until ended, so that what is saved offline
        checks in without a conflict."""
        if self.trips is None:
            raise errors.ReadOnly("a read-only mount checks nothing out")
        wanted = value.strip()
        if wanted not in (b"0", b"1"):
            raise errors.InvalidData(f"{CHECKOUT} takes 1 (check out) or 0 (end it)")
        if wanted == b"1":
            await self.trips.check_out_for_trip(doc_id)
        else:
            await self.trips.end_trip(doc_id)

    def _refused(self, doc_id: int, what: str, exc: errors.VaultError) -> None:
        if isinstance(exc, errors.VaultUnavailable):
            return  # not a refusal: logged once a minute by the FUSE layer
        messages = [str(e.get("message", "")) for e in exc.errors]
        log.warning("document %d: %s refused: %s: %s", doc_id, what, exc.type, "; ".join(messages))
        self._refusals[doc_id] = (
            time.monotonic(),
            {
                "operation": what,
                "type": exc.type,
                "message": exc.message,
                "errors": exc.errors,
                "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        )
