"""Creates of new documents, sent exactly once in effect, also across a restart.

Owns the create request and its marker (``external_id__v = vaultfs-<uuid>``, a value
only this mount chose) and what makes it durable: before a create is sent, its fields,
file name and a hard link to its content are recorded in ``<spool>/creates/``; the
record goes once the vault answered. An answer that is lost is reconciled by looking
for the marker among the latest-changed documents (one call) before the create is
sent again (``send_create``). A daemon that died with a create in flight leaves the
record: the next start looks for each marker, forgets the ones the vault has and sends
the others (``replay``), so nothing goes to lost+found that the vault has, and nothing
is sent twice.

```
<spool>/creates/<marker>.json   fields, file name (mode 0600)
<spool>/creates/<marker>.data   a hard link to the content
```
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

from vaultfs import errors
from vaultfs.bridge.tree.index import SORT
from vaultfs.bridge.write.spool import durable
from vaultfs.client import CREATES, Attempt, VaultApi, retrying

__all__ = [
    "MARKER_FIELD",
    "CreateRecord",
    "contents_in_flight",
    "find_marker",
    "new_marker",
    "replay",
    "send_create",
]

log = logging.getLogger(__name__)

#: The field a create carries the mount's marker in.
MARKER_FIELD = "external_id__v"
_MARKER_PREFIX = "vaultfs-"
#: The latest-changed documents searched for a marker (one list call).
_RECONCILE_PAGE = 200
_CREATES = "creates"


def new_marker() -> str:
    return f"{_MARKER_PREFIX}{uuid.uuid4()}"


class CreateRecord:
    """The durable record of one create in flight (blocking file operations)."""

    def __init__(self, directory: Path, marker: str) -> None:
        folder = directory / _CREATES
        self.marker = marker
        self.meta = folder / f"{marker}.json"
        self.content = folder / f"{marker}.data"

    @classmethod
    def write(
        cls, directory: Path, fields: dict[str, str], filename: str, content: Path
    ) -> CreateRecord:
        """Record a create before it is sent: ``fields`` carry its marker."""
        record = cls(directory, fields[MARKER_FIELD])
        durable.ensure_private_dir(record.meta.parent)
        with contextlib.suppress(FileNotFoundError):
            record.content.unlink()
        os.link(content, record.content)  # the content is durable: fsync'd at close
        durable.write_json_atomically(
            record.meta, {"fields": fields, "filename": filename, "recorded": time.time()}
        )
        return record

    def drop(self) -> None:
        for path in (self.meta, self.content):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


async def find_marker(client: VaultApi, marker: str) -> dict[str, object] | None:
    """The record of the document carrying ``marker`` among the latest changed (one
    call), None when there is none; a failure to ask counts as none."""
    found = await _find_markers(client, {marker})
    return found.get(marker)


async def _find_markers(client: VaultApi, markers: set[str]) -> dict[str, dict[str, object]]:
    try:
        page = await client.list_documents(limit=_RECONCILE_PAGE, sort=SORT)
    except errors.VaultError as exc:
        log.warning("looking for documents whose create answer was lost: %s", exc)
        return {}
    return {str(r.get(MARKER_FIELD)): r for r in page.documents if r.get(MARKER_FIELD) in markers}


def _ambiguous(exc: errors.VaultError) -> bool:
    """Failures after which the create may or may not have happened."""
    return isinstance(
        exc, errors.VaultUnavailable | errors.ServerException | errors.ApiLimitExceeded
    ) or (exc.http_status >= 500)


async def send_create(
    client: VaultApi,
    fields: dict[str, str],
    content: Path,
    filename: str,
    rng: random.Random,
    on_found: Callable[[dict[str, object]], None] = lambda record: None,
) -> int:
    """Create the document exactly once, whatever happens to the requests: after an
    answer that may have been lost, the marker is looked for before the create is
    sent again (the ``CREATES`` policy: 8 tries). ``on_found``: told of the record
    found that way."""
    marker = fields[MARKER_FIELD]

    async def create(attempt: Attempt) -> int:
        if attempt.retry:  # the earlier try may have created it: look before resending
            found = await find_marker(client, marker)
            if found is not None:
                log.info("create %s: answer lost, document %s exists", marker, found.get("id"))
                on_found(found)
                return int(str(found["id"]))
            log.warning("create %s: not in the vault; sent again", marker)
        # The content is named by a number or a marker: the name travels as data.
        return await client.create_document(fields, content, filename=filename)

    return await retrying(
        create, policy=CREATES, rng=rng, what=f"create {marker}", retryable=_ambiguous
    )


async def replay(
    directory: Path,
    client: VaultApi,
    keep_lost: Callable[[Path, str, errors.VaultError], Awaitable[Path]],
) -> None:
    """At start: settle every create an earlier daemon left in flight. One call looks
    for all their markers; one the vault has is forgotten, the others are sent (their
    content was whole: a create is recorded only after its file's last close)."""
    folder = directory / _CREATES
    if not folder.is_dir():
        return
    left: dict[str, tuple[CreateRecord, dict[str, str], str]] = {}
    for path in sorted(folder.glob("*.json")):
        record = CreateRecord(directory, path.name.removesuffix(".json"))
        try:
            meta = json.loads(path.read_text())
            fields = {str(k): str(v) for k, v in meta["fields"].items()}
            filename = str(meta["filename"])
            if fields.get(MARKER_FIELD) != record.marker or not record.content.exists():
                raise ValueError("marker or content missing")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.error("spool: unreadable create record %s set aside: %s", path.name, exc)
            with contextlib.suppress(OSError):
                path.rename(path.with_suffix(".unreadable"))
            continue
        left[record.marker] = (record, fields, filename)
    if not left:
        return
    found = await _find_markers(client, set(left))
    rng = random.Random()
    for marker, (record, fields, filename) in left.items():
        if marker in found:
            log.info("spool: %r was created before the restart (document %s); not sent again",
                     filename, found[marker].get("id"))  # fmt: skip
        else:
            try:
                doc_id = await send_create(client, fields, record.content, filename, rng)
                log.info("spool: %r created after the restart as document %d", filename, doc_id)
            except errors.VaultError as exc:
                if isinstance(exc, errors.VaultUnavailable | errors.ApiLimitExceeded):
                    log.warning("spool: create of %r left for the next start: %s", filename, exc)
                    continue
                await keep_lost(record.content, filename, exc)
        await trio.to_thread.run_sync(record.drop)


def contents_in_flight(directory: Path) -> set[int]:
    """The inodes of the contents of creates in flight: a scratch file that is one of
    them is not lost at a restart (``replay`` settles it)."""
    folder = directory / _CREATES
    if not folder.is_dir():
        return set()
    return {p.stat().st_ino for p in folder.glob("*.data")}
