"""The status document: what ``.vaultfs/status`` (and ``vaultfs status``) shows.

Owns the one place that gathers the mount's state (session, index, cache, API calls
and budget, pending uploads, lost+found, inodes) into JSON; the mount adds what only
it knows (its pid, where it keeps its files) through ``extra``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.fs.inodes import InodeTable
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.tree.index import DocumentIndex
from vaultfs.bridge.write.editing import Editing
from vaultfs.bridge.write.namespace import Namespace
from vaultfs.client import VaultClient

__all__ = ["StatusReport"]


class StatusReport:
    def __init__(
        self,
        options: Options,
        client: VaultClient,
        index: DocumentIndex,
        blobs: BlobCache,
        editing: Editing,
        namespace: Namespace,
        inodes: InodeTable,
        *,
        extra: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        self._options = options
        self._client = client
        self._index = index
        self._blobs = blobs
        self._editing = editing
        self._namespace = namespace
        self._inodes = inodes
        self._extra = extra
        #: when the mount started: the times of its own directories
        self.started = time.time()

    def document(self) -> dict[str, Any]:
        index = self._index
        budget = self._client.budget
        refreshed = index.last_refresh
        status: dict[str, Any] = {
            "vault_url": self._options.url,
            "user": self._options.user,
            "session_state": self._client.session_state,
            "read_only": self._options.read_only,
            "index": {
                "documents": len(index.documents),
                "ready": index.ready.is_set(),
                "age_seconds": None
                if refreshed is None
                else round(time.monotonic() - refreshed, 3),
            },
            "cache": self._blobs.usage(),
            "api_calls": budget.calls,
            "api_calls_by_endpoint": dict(budget.by_endpoint),
            "budget_remaining": {"burst": budget.burst_remaining, "daily": budget.daily_remaining},
            "pending_uploads": self._editing.pending(),
            "lost_and_found": self._editing.lost_records(),
            "pending_new_documents": self._namespace.pending_new(),
            # check-ins and creates a last close started and that are not done yet
            "saves_in_flight": self._editing.in_flight + self._namespace.in_flight,
            "inodes": len(self._inodes),
        }
        # What the mount adds never replaces what the file system reports itself.
        return {**self._extra(), **status}

    def as_bytes(self) -> bytes:
        return (json.dumps(self.document(), indent=2, sort_keys=True) + "\n").encode()
