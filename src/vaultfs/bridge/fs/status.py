"""The status document: what ``.vaultfs/status`` (and ``vaultfs status``) shows.

Owns the one place that gathers the mount's state (session, index, cache, API calls
and budget, pending uploads, new files, lost+found, inodes) into JSON; the mount adds
what only it knows (its pid, where it keeps its files) through ``extra``.

Every save the vault does not have yet names its file by its path in the mount
(``path``, relative to the mount point, from ``paths``: no API call), so that
``vaultfs sync PATH`` can tell which ones are under PATH:

- ``pending_uploads``: spool entries (``editing`` while a program holds the file open,
  then ``pending``/``uploading``/``unlocking``), drafts and renditions/attachments;
- ``new_files``: files that become new documents (or renditions/attachments) and are
  still open for writing (``editing``) or being created (``creating``), and files
  dropped into a document's directory waiting out their grace before they become its
  attachments (``dropped``);
- ``pending_new_documents``: new files waiting for fields the vault requires;
- ``vault``: whether the vault can be reached (``online``, ``offline``, ``signed out``),
  since when and why, and the last time it was away;
- ``checked_out``: the documents this client holds checked out (its leases), each with
  its path, why (a save, an editor's lock file, a WebDAV lock) and its state (``owed``:
  checked out offline, the vault's lock taken once it is back);
- ``pinned``: the documents kept for offline (``content.pins``): how many, their
  bytes, the bytes and documents still to download, downloads under way and done,
  the first few by path and the downloads that failed;
- ``lost_and_found``: content the vault refused, with ``mount_path`` (the file under
  ``.vaultfs/lost+found``) and ``saved_as`` (the file it was saved as, None when not
  known: a new document's folder is not recorded).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.pins import Pins
from vaultfs.bridge.fs.inodes import InodeTable
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.index import DocumentIndex
from vaultfs.bridge.tree.keys import typed
from vaultfs.bridge.tree.nodes import CONTROL_DIR, LOST_AND_FOUND
from vaultfs.bridge.tree.walks import WalkShare
from vaultfs.bridge.write.editing import Editing
from vaultfs.bridge.write.new_documents import NewDocuments
from vaultfs.bridge.write.scratch import is_drop, is_upload, makes_document
from vaultfs.client import VaultApi

__all__ = ["StatusReport"]


class StatusReport:
    def __init__(
        self,
        options: Options,
        client: VaultApi,
        index: DocumentIndex,
        blobs: BlobCache,
        editing: Editing,
        new_documents: NewDocuments,
        inodes: InodeTable,
        paths: DisplayPaths,
        walks: WalkShare,
        pins: Pins,
        *,
        started: float,
        extra: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        """``paths``: the paths the status names files by; ``started``: when the mount
        started (``time.time()``)."""
        self._options = options
        self._client = client
        self._index = index
        self._blobs = blobs
        self._editing = editing
        self._new_documents = new_documents
        self._scratch = new_documents.overlay.scratch
        self._inodes = inodes
        self._extra = extra
        self._walks = walks
        self._pins = pins
        self.paths = paths
        self.started = started

    def document(self) -> dict[str, Any]:
        index = self._index
        budget = self._client.budget
        refreshed = index.last_refresh
        status: dict[str, Any] = {
            "vault_url": self._options.url,
            "user": self._options.user,
            "session_state": self._client.session_state,
            "session_error": self._client.session_refusal,
            # whether the vault can be reached (offline: what waits is what is pending)
            "vault": self._reach(),
            "read_only": self._options.read_only,
            "index": {
                "documents": len(index.documents),
                "ready": index.ready.is_set(),
                # a build's progress: documents indexed of the list's total
                "indexed": index.indexed,
                "total": index.total,
                "seconds_left": index.seconds_left(),
                "file": str(index.store.path) if index.store.path is not None else None,
                "age_seconds": None
                if refreshed is None
                else round(time.monotonic() - refreshed, 3),
                "polls_asked": index.polls_asked,
                "polls_answered": index.polls_answered,
                "poll_error": index.poll_error,
            },
            "cache": self._blobs.usage(),
            "api_calls": budget.calls,
            "api_calls_by_endpoint": dict(budget.by_endpoint),
            "budget_remaining": {"burst": budget.burst_remaining, "daily": budget.daily_remaining},
            # the walks' share of the budget, and the programs that spent it
            "walks": self._walks.status(),
            "pending_uploads": [self._with_path(e) for e in self._editing.pending()],
            "new_files": self._new_files(),
            "lost_and_found": [self._lost_with_paths(r) for r in self._editing.lost_records()],
            "pending_new_documents": [
                self._waiting_with_path(w) for w in self._new_documents.pending_new()
            ],
            "checked_out": self._checked_out(),
            "pinned": self._pinned(),
            # check-ins and creates a last close started and that are not done yet
            "saves_in_flight": self._editing.in_flight + self._new_documents.in_flight,
            "inodes": len(self._inodes),
            "inodes_peak": self._inodes.peak,
        }
        # What the mount adds never replaces what the file system reports itself.
        return {**self._extra(), **status}

    def _reach(self) -> dict[str, Any]:
        reach = self._client.reach
        away = reach.last_away
        return {
            "state": reach.state.value,
            "message": reach.state.message,
            "since": _iso(reach.since),
            "reason": reach.reason,
            "last_away": None if away is None else {"from": _iso(away[0]), "until": _iso(away[1])},
        }

    def _checked_out(self) -> list[dict[str, Any]]:
        spool = self._editing.spool
        if spool is None:
            return []
        leases = spool.leases
        return [
            {
                "doc_id": doc_id,
                "path": self._in_document(doc_id, None),
                "why": reasons,
                "state": leases.state(doc_id).value,
            }
            for doc_id, reasons in leases.held().items()
        ]

    def _pinned(self) -> dict[str, Any]:
        pinned = self._pins.status()
        doc_ids: list[int] = pinned.pop("doc_ids")
        return {
            **pinned,
            "paths": [self.paths.of_document(d) for d in doc_ids],
            # pinned documents the paths leave out
            "more": pinned["documents"] - len(doc_ids),
            "failed": [{**f, "path": self.paths.of_source(f["doc_id"])} for f in pinned["failed"]],
        }

    # --- paths of what the vault does not have yet ------------------------------------

    def _in_document(self, doc_id: object, within: str | None) -> str | None:
        """The path of a document's source file (``within`` None) or of ``within``, a
        path inside its directory (``renditions/x.pdf``)."""
        if not isinstance(doc_id, int):
            return None
        if within is None:
            return self.paths.of_source(doc_id)
        directory = self.paths.of_document(doc_id)
        return None if directory is None else f"{directory}/{within}"

    def _with_path(self, entry: dict[str, Any]) -> dict[str, Any]:
        # A draft's filename is its source file's name in the vault; a rendition's or an
        # attachment's is a path inside the document's directory (``renditions/x.pdf``).
        filename = str(entry.get("filename") or "")
        within = filename if "/" in filename else None
        return {**entry, "path": self._in_document(entry.get("doc_id"), within)}

    def _lost_with_paths(self, record: dict[str, Any]) -> dict[str, Any]:
        target, filename = record.get("target"), record.get("filename")
        within: str | None = None
        if target == "attachment":
            within = f"attachments/{filename}"
        elif target == "rendition":
            major, minor = record.get("major"), record.get("minor")
            version = f"versions/{major}.{minor}/" if major is not None else ""
            within = f"{version}renditions/{filename}"
        return {
            **record,
            "mount_path": f"{CONTROL_DIR}/{LOST_AND_FOUND}/{record['file']}",
            "saved_as": self._in_document(record.get("doc_id"), within),
        }

    def _waiting_with_path(self, waiting: dict[str, Any]) -> dict[str, Any]:
        scratch = self._scratch
        parent = typed(tuple(waiting.get("folder") or ()))
        key = scratch.lookup(parent, str(waiting.get("file"))) if scratch is not None else None
        return {**waiting, "path": self.paths.of_key(key) if key is not None else None}

    def _new_files(self) -> list[dict[str, Any]]:
        """Files that become new documents (or renditions, attachments) and are still
        open for writing, or closed and being created now. Closed, such a file is in
        the vault once it has left this list (it is then a document, or a spool entry
        of ``pending_uploads``, or in lost+found, or waiting for fields)."""
        scratch, drops = self._scratch, self._new_documents.drops
        if scratch is None:
            return []
        found = []
        for file in scratch.files.values():
            if not file.linked or file.became is not None or file.missing is not None:
                continue
            if file.writers.count == 0 and not file.dirty:
                continue  # taken already (an upload sent, or nothing written)
            dropped = is_drop(file.parent, file.name)
            if dropped and file.writers.count == 0 and not (drops and drops.waiting(file)):
                continue  # being taken: in the spool (or the vault) soon
            kept = makes_document(file.parent, file.name) or is_upload(file.parent, file.name)
            if not (dropped or kept):
                continue
            state = "editing" if file.writers.count > 0 else "dropped" if dropped else "creating"
            if file.number in self._new_documents.waiting_for_vault:
                state = "waiting for the vault"
            found.append({"path": self.paths.of_key(keys.scratch(file.number)), "state": state})
        return found

    def as_bytes(self) -> bytes:
        return (json.dumps(self.document(), indent=2, sort_keys=True) + "\n").encode()


def _iso(when: float) -> str:
    """A wall time as the status says times: ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(when, UTC).isoformat(timespec="seconds")
