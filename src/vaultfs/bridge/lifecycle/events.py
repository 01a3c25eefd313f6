"""A document's distribution events: the ``.events.jsonl`` file and logging one.

The file's content is every event of the document (``GET .../events``, all pages),
one compact JSON object per line, oldest first and newest last (by
``event_date__v``, then the vault's order), read when the file is opened: its size
is unknown until then, so a cold ``find`` or ``ls -l`` costs no call. Its size is
the last content read (0 before the first open), and the file is opened with
``direct_io`` so ``cat`` and ``tail`` read the whole content whatever the size
said. ``log`` takes what ``setfattr -n user.vault.event`` writes: a JSON object of
the event's fields (``event_type__v``, ``event_subtype__v``, ``classification__v``
and the subtype's properties), posted on the latest version.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from vaultfs import errors
from vaultfs.bridge.tree import nodes
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.tree.versions import latest_version
from vaultfs.client import VaultApi

__all__ = ["EVENTS_FILE", "DocumentEvents", "EventsStat", "event_form"]

log = logging.getLogger(__name__)

#: the name of the events file in every document directory (not listed)
EVENTS_FILE = nodes.EVENTS_FILE


@dataclass
class EventsStat:
    size: int
    #: when the content was read (ns since the epoch)
    read_ns: int


def event_form(value: bytes) -> dict[str, str]:
    """The form fields of ``setfattr -n user.vault.event -v JSON``."""
    try:
        body = json.loads(value.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise errors.InvalidData(f"an event is a JSON object of its fields: {exc}") from None
    if not isinstance(body, dict):
        raise errors.InvalidData("an event is a JSON object of its fields")
    form: dict[str, str] = {}
    for name, item in body.items():
        if isinstance(item, list):
            form[str(name)] = ",".join(str(v) for v in item)
        elif isinstance(item, bool):
            form[str(name)] = "true" if item else "false"
        elif item is not None:
            form[str(name)] = str(item)
    return form


def _order(event: dict[str, Any]) -> str:
    return str(event.get("event_date__v") or "")


class DocumentEvents:
    def __init__(self, tree: Tree, client: VaultApi) -> None:
        self.tree = tree
        self.client = client
        self._stats: dict[int, EventsStat] = {}

    def stat(self, doc_id: int) -> EventsStat | None:
        """Size and time of the content last read, None before the first read."""
        return self._stats.get(doc_id)

    async def content(self, doc_id: int) -> bytes:
        self.tree.record(doc_id)  # a document the index no longer has: ENOENT
        events = sorted(await self.client.document_events(doc_id), key=_order)
        data = b"".join(
            json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
            for e in events
        )
        self._stats[doc_id] = EventsStat(len(data), time.time_ns())
        return data

    async def log(self, doc_id: int, value: bytes) -> int | None:
        """Log the event ``value`` describes on the latest version; returns its id."""
        form = event_form(value)
        version = latest_version(self.tree.record(doc_id))
        if version is None:
            raise errors.InvalidDocument(f"document {doc_id} has no version numbers")
        answer = await self.client.log_event(doc_id, *version, form)
        self._stats.pop(doc_id, None)
        log.info(
            "document %d: event %s/%s logged on version %d.%d",
            doc_id,
            form.get("event_type__v"),
            form.get("event_subtype__v"),
            *version,
        )
        event_id = answer.get("id")
        return (
            int(event_id) if isinstance(event_id, int | str) and str(event_id).isdigit() else None
        )
