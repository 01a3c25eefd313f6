"""Documents kept for offline: what ``vaultfs pin`` and ``vaultfs unpin`` change.

Owns, for one mount (its vault and user):

* the durable set of pinned document ids: ``pins-<hash of vault and user>.json`` in
  the content cache's directory (mode 0600), replaced atomically (temporary file,
  fsync, rename, fsync of the directory), so a crash leaves the old set or the new
  one, never a torn file;
* the answer the content cache's eviction asks (``BlobCache.keeps``): whether a cache
  file holds the latest content of a pinned document. Only the latest version's
  source file is kept: once a new version is in the cache the older one may go;
* the background downloads of that content: a worker fed by a trio memory channel,
  ``DOWNLOADS`` at a time, one API call each (the file download), only while the
  vault can be reached (``Reachability.wait_until``). They are what the user asked
  for, so they do not spend the walks' share (``tree.walks``); they are paced instead.
  A pinned document the index learns a new version of (``document_changed``, an
  ``DocumentIndex.on_change`` callback) is queued again: the new content comes in the
  background while online;
* what the extended attribute ``user.vaultfs.pin`` means on a node (``owns``,
  ``set``, ``describe``): the documents a node stands for are a document (its
  directory or its latest source file), every document in a folder of the type
  hierarchy or below it (from the index: no call), or the current answer of a view or
  a search's folder (its links);
* the refusal of a pin whose content would not fit: the pinned total (exact sizes
  where a download told them, else the index's ``size__v``, which is in KB) may not
  exceed the cache's bound. ``errors.CacheTooSmall`` (ENOSPC) says the numbers, and
  ``describe`` gives them to the command, which sees only the errno;
* the ``pinned`` part of the status (``status``; the status report adds paths).

Unpinning drops documents from the set only: their content stays in the cache, the
least recently used first to go again. The decisions, for users, are in
docs/user-guide.md ("Keeping documents for offline") and docs/reference.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from vaultfs import durable, errors
from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import Content, Contents
from vaultfs.bridge.tree.keys import DocumentKey, FolderKey, Kind, NodeKey, SourceKey, typed
from vaultfs.bridge.tree.tree import Tree

__all__ = ["DOWNLOADS", "PIN_XATTR", "SHOWN", "Pins", "pins_file_name"]

log = logging.getLogger(__name__)

#: the extended attribute ``vaultfs pin``/``unpin`` set: "1" pins, "0" (or its
#: removal) unpins; getfattr answers what pinning the node means (``describe``)
PIN_XATTR = "user.vaultfs.pin"
#: pinned documents downloaded at once: enough to keep a link busy, few enough to
#: leave the vault's burst budget and the user's own reads their share
DOWNLOADS = 2
#: documents (and failures) the status names; the counts cover all of them
SHOWN = 20
_YES = frozenset({"1", "true", "yes", "on"})
_NO = frozenset({"0", "false", "no", "off"})
#: a failed download is tried again after this long, doubled per failure, at most
#: ``_RETRY_MAX``; what waiting does not cure (the document gone, no access) is not
_RETRY_FIRST = 30.0
_RETRY_MAX = 900.0
_FOR_GOOD = (errors.InvalidDocument, errors.InsufficientAccess, errors.CacheTooSmall)


def pins_file_name(vault_url: str, user: str) -> str:
    """The file of ``user``'s pins on the vault at ``vault_url``: named by both, as the
    index is, so one user's or vault's document ids never stand for another's."""
    digest = hashlib.sha256(f"{vault_url.rstrip('/')}\0{user}".encode()).hexdigest()[:24]
    return f"pins-{digest}.json"


@dataclass
class _Pinned:
    """A pinned document's latest content as the index describes it now (None: the
    document has no file, or is not in the index yet)."""

    content: Content | None
    #: the cache file that holds it (``BlobCache.file_of``)
    file: str | None


@dataclass
class _Failure:
    error: str
    attempts: int


class Pins:
    def __init__(
        self,
        path: Path,
        tree: Tree,
        blobs: BlobCache,
        contents: Contents,
        *,
        identity: dict[str, str] | None = None,
        downloads: int = DOWNLOADS,
    ) -> None:
        """``path``: the pins' file (``pins_file_name`` in the content cache's
        directory); ``identity``: the vault and user written in it, for people;
        ``downloads``: pinned documents downloaded at once."""
        self.path = path
        self._tree = tree
        self._blobs = blobs
        self._contents = contents
        self._identity = dict(identity or {})
        self._downloads = max(1, downloads)
        self._pinned: dict[int, _Pinned] = {}
        #: the cache files of the pinned documents' latest content (``keeps``)
        self._files: set[str] = set()
        self._send, self._receive = trio.open_memory_channel[int](math.inf)
        #: queued and not taken by a worker yet (a document is queued once)
        self._queued: set[int] = set()
        self._downloading: set[int] = set()
        self._failures: dict[int, _Failure] = {}
        #: downloads this daemon completed (one API call each)
        self.downloads = 0
        self._save_lock = trio.Lock()
        self._nursery: trio.Nursery | None = None
        for doc_id in self._load():
            self._track(doc_id)

    # --- the set on disk --------------------------------------------------------------

    def _load(self) -> list[int]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("pins: %s cannot be read (%s): nothing is pinned", self.path, exc)
            return []
        ids = data.get("documents") if isinstance(data, dict) else None
        if not isinstance(ids, list):
            log.warning("pins: %s holds no list of documents: nothing is pinned", self.path)
            return []
        return [int(i) for i in ids if isinstance(i, int) and not isinstance(i, bool)]

    async def _save(self) -> None:
        """Write the set as it is when the write begins (writes go one at a time, so
        the file ends as the last change left the set)."""
        async with self._save_lock:
            data = {**self._identity, "documents": sorted(self._pinned)}
            await trio.to_thread.run_sync(durable.write_json_atomically, self.path, data)

    def _save_soon(self) -> None:
        if self._nursery is not None:
            self._nursery.start_soon(self._save)
        else:
            durable.write_json_atomically(
                self.path, {**self._identity, "documents": sorted(self._pinned)}
            )

    # --- what is pinned ---------------------------------------------------------------

    def _track(self, doc_id: int) -> None:
        """(Re)read ``doc_id``'s latest content from the index."""
        old = self._pinned.get(doc_id)
        if old is not None and old.file is not None:
            self._files.discard(old.file)
        content = self._contents.latest_source(doc_id)
        file = BlobCache.file_of(content.key) if content is not None else None
        self._pinned[doc_id] = _Pinned(content, file)
        if file is not None:
            self._files.add(file)

    def _untrack(self, doc_id: int) -> None:
        old = self._pinned.pop(doc_id, None)
        if old is not None and old.file is not None:
            self._files.discard(old.file)
        self._failures.pop(doc_id, None)

    def keeps(self, file: str) -> bool:
        """Whether cache file ``file`` holds a pinned document's latest content (the
        content cache's eviction asks, ``BlobCache.keeps``)."""
        return file in self._files

    def _size(self, content: Content | None) -> int:
        """Bytes ``content`` takes in the cache: exact once a download told it, else
        the index's estimate (``size__v`` is in KB)."""
        if content is None:
            return 0
        exact = self._blobs.exact_size(content.key)
        return exact if exact is not None else content.estimate

    def _missing(self, pinned: _Pinned) -> bool:
        return pinned.content is not None and not self._blobs.is_cached(pinned.content.key)

    def pinned_bytes(self) -> int:
        return sum(self._size(p.content) for p in self._pinned.values())

    # --- changing the set -------------------------------------------------------------

    async def pin(self, doc_ids: list[int]) -> int:
        """Pin ``doc_ids`` (those pinned already stay) and queue what the cache lacks;
        the number newly pinned. ``CacheTooSmall`` when their content and what is
        pinned already would not fit in the cache: then nothing is pinned."""
        new = [d for d in dict.fromkeys(doc_ids) if d not in self._pinned]
        asked = sum(self._size(self._contents.latest_source(d)) for d in new)
        pinned, limit = self.pinned_bytes(), self._blobs.max_bytes
        if new and pinned + asked > limit:
            raise errors.CacheTooSmall(
                f"pinning {len(new)} more document(s) ({asked} bytes) would keep "
                f"{pinned + asked} bytes for offline; the content cache holds {limit} "
                f"(pinned now: {pinned} bytes in {len(self._pinned)} document(s))"
            )
        for doc_id in new:
            self._track(doc_id)
        if new:
            try:
                await self._save()
            except OSError:
                for doc_id in new:  # not on disk: not pinned (the caller hears why)
                    self._untrack(doc_id)
                raise
            log.info("pins: %d document(s) pinned (%d bytes), %d in all", len(new), asked,
                     len(self._pinned))  # fmt: skip
        # Asking again for what is pinned already retries what failed or is missing.
        for doc_id in dict.fromkeys(doc_ids):
            self._failures.pop(doc_id, None)
            self._queue(doc_id)
        return len(new)

    async def unpin(self, doc_ids: list[int]) -> int:
        """Unpin ``doc_ids``: their content stays in the cache, evictable again; the
        number that were pinned."""
        gone = [d for d in dict.fromkeys(doc_ids) if d in self._pinned]
        for doc_id in gone:
            self._untrack(doc_id)
        if gone:
            await self._save()
            log.info("pins: %d document(s) unpinned, %d left", len(gone), len(self._pinned))
        return len(gone)

    def document_changed(self, doc_id: int) -> None:
        """The index saw ``doc_id`` change or leave (``DocumentIndex.on_change``): a
        pinned document's new version is queued; one the vault deleted is unpinned."""
        if doc_id not in self._pinned:
            return  # every change of a vault's documents comes here: O(1) for the rest
        if self._tree.index.get(doc_id) is None:
            log.info("pins: document %d left the vault: unpinned", doc_id)
            self._untrack(doc_id)
            self._save_soon()
            return
        self._track(doc_id)
        self._queue(doc_id)

    # --- the extended attribute -------------------------------------------------------

    @staticmethod
    def owns(name: str) -> bool:
        return name == PIN_XATTR

    async def documents_of(self, key: NodeKey) -> list[int]:
        """The documents node ``key`` stands for: a document (its directory or latest
        source file), a folder's from the index, a view's or a search's answer;
        ``errors.Unsupported`` for any other node."""
        key = typed(key)
        if isinstance(key, SourceKey) or (isinstance(key, DocumentKey) and key.kind == Kind.DOC):
            if self._tree.index.get(key.doc_id) is None:
                raise errors.NotFound(f"document {key.doc_id} is not in the index")
            return [key.doc_id]
        if isinstance(key, FolderKey):
            return self._tree.documents_below(key)
        if key.is_answer and not key.is_file:
            # A view's or a search's folder: the documents its links lead to now.
            children = await self._tree.children(key)
            return list(dict.fromkeys(typed(c).doc_id for c in children.values()))
        raise errors.Unsupported(
            "only a document, a folder or a view can be pinned (its directory, or a "
            "document's file)"
        )

    async def set(self, key: NodeKey, value: bytes | None) -> None:
        """setfattr of ``user.vaultfs.pin`` on ``key``: "1" pins, "0" or a removal
        unpins; returns once the set is on disk."""
        word = "0" if value is None else value.decode(errors="replace").strip().lower()
        if word not in _YES | _NO:
            raise errors.InvalidData(f"{PIN_XATTR} takes 1 (pin) or 0 (unpin), not {word!r}")
        doc_ids = await self.documents_of(key)
        if word in _YES:
            await self.pin(doc_ids)
        else:
            await self.unpin(doc_ids)

    async def describe(self, key: NodeKey) -> bytes:
        """getfattr of ``user.vaultfs.pin``: what the node's documents take, how many
        are pinned, and the numbers a refusal is made of (JSON)."""
        doc_ids = await self.documents_of(key)
        contents = {d: self._contents.latest_source(d) for d in doc_ids}
        pinned = [d for d in doc_ids if d in self._pinned]
        return json.dumps(
            {
                "documents": len(doc_ids),
                "pinned": len(pinned),
                "bytes": sum(self._size(c) for c in contents.values()),
                # what pinning it would add to the pinned total
                "adds_bytes": sum(
                    self._size(c) for d, c in contents.items() if d not in self._pinned
                ),
                "to_download": sum(
                    self._size(self._pinned[d].content)
                    for d in pinned
                    if self._missing(self._pinned[d])
                ),
                "pinned_bytes": self.pinned_bytes(),
                "cache_bytes": self._blobs.max_bytes,
            },
            separators=(",", ":"),
        ).encode()

    # --- downloading ------------------------------------------------------------------

    def _queue(self, doc_id: int) -> None:
        pinned = self._pinned.get(doc_id)
        if pinned is None or not self._missing(pinned) or doc_id in self._queued:
            return
        self._queued.add(doc_id)
        self._send.send_nowait(doc_id)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The downloads, until cancelled (``nursery.start(pins.run)``): what the
        cache lacks of the pinned documents is queued once the index is read."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for _ in range(self._downloads):
                nursery.start_soon(self._worker)
            task_status.started()
            try:
                # A mount that starts on a new index learns the records first.
                await self._tree.index.ready.wait()
                for doc_id in list(self._pinned):
                    self._track(doc_id)
                    self._queue(doc_id)
                await trio.sleep_forever()
            finally:
                self._nursery = None

    async def _worker(self) -> None:
        async for doc_id in self._receive:
            self._queued.discard(doc_id)
            await self._fetch(doc_id)

    async def _fetch(self, doc_id: int) -> None:
        reach = self._tree.reach
        while True:
            pinned = self._pinned.get(doc_id)
            if pinned is None or pinned.content is None or not self._missing(pinned):
                return  # unpinned, or in the cache meanwhile (a read fetched it)
            if not reach.online:
                await reach.wait_until(online=True)
                continue  # what is pinned may have changed while the vault was away
            content = pinned.content
            self._downloading.add(doc_id)
            try:
                await self._blobs.cached_path(content.key, content.fetch)
            except (errors.VaultError, OSError) as exc:
                if isinstance(exc, errors.VaultUnavailable) and not reach.online:
                    continue  # the vault went away meanwhile: once it is back
                self._failed(doc_id, exc)
                return
            finally:
                self._downloading.discard(doc_id)
            self.downloads += 1
            if not self._blobs.is_cached(content.key):
                # Bigger than the estimate the pin was accepted by, and than the cache.
                self._failed(doc_id, errors.CacheTooSmall("bigger than the content cache"))
                return
            self._failures.pop(doc_id, None)
            return

    def _failed(self, doc_id: int, exc: BaseException) -> None:
        before = self._failures.get(doc_id)
        attempts = (before.attempts if before is not None else 0) + 1
        self._failures[doc_id] = _Failure(str(exc), attempts)
        if isinstance(exc, _FOR_GOOD):
            log.warning("pins: document %d cannot be kept for offline: %s", doc_id, exc)
            return
        delay = min(_RETRY_MAX, _RETRY_FIRST * 2 ** (attempts - 1))
        log.warning("pins: download of document %d failed (%s); again in %.0f s",
                    doc_id, exc, delay)  # fmt: skip
        if self._nursery is not None:
            self._nursery.start_soon(self._again, doc_id, delay)

    async def _again(self, doc_id: int, delay: float) -> None:
        await trio.sleep(delay)
        self._queue(doc_id)

    # --- the status -------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The ``pinned`` part of the status: counts and bytes of all pinned documents,
        the first ``SHOWN`` of them (``doc_ids``) and of the failed downloads."""
        missing = [d for d, p in self._pinned.items() if self._missing(p)]
        lacking = set(missing)
        return {
            "documents": len(self._pinned),
            "bytes": self.pinned_bytes(),
            "to_download": sum(self._size(self._pinned[d].content) for d in missing),
            "waiting": len(missing),
            "downloading": len(self._downloading),
            "downloads": self.downloads,
            "doc_ids": sorted(self._pinned)[:SHOWN],
            "failed": [
                {"doc_id": d, "error": f.error, "attempts": f.attempts}
                for d, f in sorted(self._failures.items())
                if d in lacking  # a read may have brought it since
            ][:SHOWN],
        }
