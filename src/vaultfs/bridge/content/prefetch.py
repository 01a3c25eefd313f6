"""Reading ahead of a tree walk: the details and small source files of the next documents.

Owns the guess of what a walk (``find``, ``grep -r``, ``rsync``) reads next: the
documents after the one it is in, in the order its folder lists them. A visit to a
document is taken for a walk only when it is the document right after the one visited
before it in its folder's listing: a walk visits the documents in the order it was
handed them, so its second document starts the read-ahead. A file manager that lists a
folder and opens one of its documents (a path typed in its location bar, the first
document included), or thumbnails its file, is no walk: that costs the calls of that
document and nothing else. Listings the kernel keeps (no OPENDIR) change nothing: the
order is the one the folder's last listing through the mount gave. When the walk
needs a document's details (it lists ``versions/``, ``renditions/`` or
``attachments/``), the details of the next documents are fetched; when it opens a small
source file, the next documents' source files are downloaded. At most ``AHEAD`` at a
time, in the content cache's nursery, only what such a walk reads anyway, and nothing
while the vault's burst budget runs low or the cache has no room: a prefetch must never
cost the user's own calls their budget or their cached files.

A visit costs the walk next to nothing when everything ahead is at hand (a warm
``grep -r`` opens hundreds of files a second): each document ahead is considered once
per walk (the window moves by one document per visit, and a document's source file and
its ``versions/`` twin are one visit), and a source file already in the cache, or too
big, is passed over without starting a task.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from itertools import islice

import trio

from vaultfs import errors
from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import Content, Contents
from vaultfs.bridge.tree.keys import DocumentKey, NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.client import VaultApi

__all__ = ["AHEAD", "WALKED", "Prefetcher"]

log = logging.getLogger(__name__)

#: documents read ahead of the walk, and calls or downloads in flight at most
AHEAD = 8
#: source files at least this big are not read ahead (a walk may never read them)
SMALL = 1 << 20
#: no prefetch below this many remaining burst calls (the client paces near 20)
_BUDGET_RESERVE = 200
#: folders whose listing order is kept for walks (memory does not grow with the vault)
_FOLDERS_KEPT = 8
#: the documents of a folder whose order is kept for a walk: those after are not read
#: ahead (a walk of more documents costs more calls than a vault's day allows)
WALKED = 50_000


class Prefetcher:
    def __init__(self, tree: Tree, blobs: BlobCache, contents: Contents, client: VaultApi) -> None:
        """``client``: whose call budget read-ahead leaves alone when it runs low."""
        self._tree = tree
        self._blobs = blobs
        self._contents = contents
        self._client = client
        self._limiter = trio.CapacityLimiter(AHEAD)
        #: the folders listed last, newest last: their listings, and their documents in
        #: listing order with each one's position (made when a walk first asks: a folder
        #: of 100,000 documents is listed far more often than walked)
        self._listed: deque[tuple[Mapping[str, NodeKey], list[int], dict[int, int]]] = deque(
            maxlen=_FOLDERS_KEPT
        )
        self._pending: set[tuple[str, int]] = set()
        #: the document visited last, and whether that visit was a walk's
        self._last: int | None = None
        self._walking = False
        #: what the current walk has considered reading ahead so far, by kind
        #: ("details", "source"): the folder's documents and the end of that stretch
        self._horizon: dict[str, tuple[list[int], int]] = {}

    def folder_listed(self, listing: Mapping[str, NodeKey]) -> None:
        """A folder was opened: its listing, the order the walk will visit it in."""
        if self._listed and self._listed[-1][0] is listing:
            return  # the same folder again, unchanged: its order (and places) stand
        self._listed.append((listing, [], {}))

    def _position(self, doc_id: int) -> tuple[list[int], int] | None:
        """The listed folder ``doc_id`` is in (the newest) and its position there."""
        for listing, documents, positions in reversed(self._listed):
            if not positions:
                # The first ``WALKED`` documents: a walk of more costs more calls than a
                # day's budget, and a folder of a million would be held whole.
                documents += islice(
                    (k.doc_id for k in listing.values() if isinstance(k, DocumentKey)), WALKED
                )
                positions.update(zip(documents, range(len(documents)), strict=True))
                positions[-1] = -1  # (made, even for a folder without documents)
            position = positions.get(doc_id)
            if position is not None:
                return documents, position
        return None

    def details_needed(self, doc_id: int) -> None:
        """The walk needs ``doc_id``'s details: fetch the next documents' too."""
        if not self._walked(doc_id) or self._tree.walks.walking_spent():
            return  # (past its share, the walk's read-ahead would only be refused)
        for following in self._following("details", doc_id):
            if not self._tree.has_details(following):
                self._start("details", following)

    def source_opened(self, doc_id: int, size: int) -> None:
        """The walk opened ``doc_id``'s source file of ``size`` bytes: when it is
        small, download the next documents' source files."""
        if not self._walked(doc_id) or size >= SMALL:
            return
        for following in self._following("source", doc_id):
            if self._wanted_source(following) is not None:
                self._start("source", following)

    def _walked(self, doc_id: int) -> bool:
        """Record a visit to ``doc_id``; whether it continues a walk (see above)."""
        last, self._last = self._last, doc_id
        if last == doc_id:
            return self._walking  # the same visit: its details, then its file
        found = self._position(doc_id)
        continued = False
        if found is not None:
            documents, position = found
            continued = position > 0 and documents[position - 1] == last
        self._walking = continued
        if not continued:
            self._horizon.clear()  # a new walk (or none): it considers everything anew
        return self._walking

    def _following(self, what: str, doc_id: int) -> list[int]:
        """The documents after ``doc_id`` this walk has not considered for ``what``."""
        found = self._position(doc_id)
        if found is None:
            return []
        remaining = self._client.budget.burst_remaining
        if remaining is not None and remaining < _BUDGET_RESERVE:
            return []
        documents, position = found
        start, end = position + 1, min(len(documents), position + 1 + AHEAD)
        seen = self._horizon.get(what)
        if seen is not None and seen[0] is documents:
            start = max(start, seen[1])
        self._horizon[what] = (documents, max(start, end))
        return documents[start:end]

    def _wanted_source(self, doc_id: int) -> Content | None:
        """``doc_id``'s source file when it is worth a download: small, not cached."""
        content = self._contents.latest_source(doc_id)
        if (
            content is None
            or content.estimate >= SMALL
            or self._blobs.is_cached(content.key)
            or content.estimate > self._blobs.room()
        ):
            return None
        return content

    def _start(self, what: str, doc_id: int) -> None:
        mark = (what, doc_id)
        if mark in self._pending:
            return
        fetch = self._details if what == "details" else self._source
        if self._blobs.spawn(self._run, mark, fetch):
            self._pending.add(mark)

    async def _run(self, mark: tuple[str, int], fetch: Callable[[int], Awaitable[None]]) -> None:
        try:
            async with self._limiter:
                await fetch(mark[1])
        except (errors.VaultError, OSError) as exc:
            # A guess that failed costs nothing: the walk asks again if it needs it.
            log.debug("prefetch of %s %d failed: %s", mark[0], mark[1], exc)
        finally:
            self._pending.discard(mark)

    async def _details(self, doc_id: int) -> None:
        if self._tree.index.get(doc_id) is not None:
            await self._tree.details(doc_id)

    async def _source(self, doc_id: int) -> None:
        content = self._wanted_source(doc_id)  # None: cached meanwhile, or changed
        if content is not None:
            await self._blobs.cached_path(content.key, content.fetch)
