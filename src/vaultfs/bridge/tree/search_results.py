"""What the vault answers to a search or a named filter, asked through the client and
kept for a poll interval.

Owns the calls behind the search folders and the views (``nodes.search``), and the
favourite mark that ``Favorites`` shows:

* a search is ``GET /objects/documents?search=WORDS&scope=all|contents&versionscope=all``
  in pages of 200 (one call per 200 matching versions): every version counts, so words
  found only in an older version's file find the document. The rows are grouped by
  document, in the vault's order; a document's matching versions are the rows' and
  those its ``term_highlights`` name with every word;
* a view is ``GET /objects/documents?named_filter=NAME`` (``My Documents``, ``Recent
  Documents``, ``Favorites``), pages of 200 as well.

An answer is kept for ``ttl`` seconds (the mount's poll interval) and while the index
has seen no change (a save through this mount, another client's change the poll
brought): then the next look at it asks again. At most ``_KEPT`` answers are kept.
Nothing here knows of FUSE or of node keys.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import trio

from vaultfs.bridge.tree.walks import WalkShare
from vaultfs.client import VaultApi
from vaultfs.wire import PAGE_LIMIT

__all__ = ["Answer", "Hit", "SearchResults", "hits_of"]

log = logging.getLogger(__name__)

#: answers kept at most (the oldest goes first)
_KEPT = 64
#: pages of one answer at most (10,000 rows): a search for "the" stops there
_MAX_PAGES = 50


@dataclass(frozen=True)
class Hit:
    """One document found, with the versions the words were found in (newest last)."""

    doc_id: int
    versions: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Answer:
    hits: tuple[Hit, ...]
    #: wall-clock time of the answer (a folder's mtime)
    when: float
    #: whether more rows matched than were read (``_MAX_PAGES``)
    cut: bool = False


@dataclass
class _Kept:
    answer: Answer
    #: monotonic time it was asked
    asked: float
    #: the index generation it was asked in
    generation: int


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _version(record: dict[str, Any]) -> tuple[int, int] | None:
    major = _int(record.get("major_version_number__v"))
    minor = _int(record.get("minor_version_number__v"))
    return None if major is None or minor is None else (major, minor)


def hits_of(records: Iterable[dict[str, Any]], words: str | None = None) -> list[Hit]:
    """The documents of list records (one per document, first seen first) and their
    matching versions: each record's own, and those of its ``term_highlights`` that
    name every one of ``words``."""
    wanted = {w.lower() for w in (words or "").split()}
    order: list[int] = []
    versions: dict[int, set[tuple[int, int]]] = {}
    for record in records:
        doc_id = _int(record.get("id"))
        if doc_id is None:
            continue
        if doc_id not in versions:
            order.append(doc_id)
            versions[doc_id] = set()
        own = _version(record)
        if own is not None and words is not None:
            versions[doc_id].add(own)
        for highlight in record.get("term_highlights") or []:
            if not isinstance(highlight, dict):
                continue
            terms = {str(t).lower() for t in highlight.get("highlight") or []}
            major = _int(highlight.get("major_version_number__v"))
            minor = _int(highlight.get("minor_version_number__v"))
            if wanted and wanted <= terms and major is not None and minor is not None:
                versions[doc_id].add((major, minor))
    return [Hit(d, tuple(sorted(versions[d]))) for d in order]


class SearchResults:
    def __init__(
        self,
        client: VaultApi,
        generation: Callable[[], int],
        *,
        ttl: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        walks: WalkShare | None = None,
    ) -> None:
        """``generation``: the index's change counter (an answer is dropped when it
        moves); ``ttl``: how long an answer is kept (the poll interval); ``walks``:
        what a walk listing a view may spend (a search is asked for by name, never
        walked into)."""
        self._client = client
        self._walks = walks if walks is not None else WalkShare()
        self._generation = generation
        self.ttl = ttl
        self._clock = clock
        self._kept: OrderedDict[tuple[str, ...], _Kept] = OrderedDict()
        self._locks: dict[tuple[str, ...], trio.Lock] = {}

    async def search(self, words: str, *, content_only: bool) -> Answer:
        """The documents whose fields or file text (only the text: ``content_only``)
        hold every one of ``words``, in any version."""
        scope = "contents" if content_only else "all"
        return await self._answer(
            ("search", scope, words),
            dict(search=words, scope=scope, versionscope="all"),
            words,
        )

    async def view(self, named_filter: str) -> Answer:
        """The documents of a named filter (``Favorites`` …), latest versions."""
        return await self._answer(
            ("view", named_filter), dict(named_filter=named_filter), None, view=True
        )

    def kept(self, *key: str) -> Answer | None:
        """The answer kept for a search (``"search", scope, words``) or a view
        (``"view", name``) while it is fresh; None: the next look asks the vault."""
        kept = self._kept.get(key)
        return kept.answer if kept is not None and self._fresh(kept) else None

    async def set_favorite(self, doc_id: int, favorite: bool) -> None:
        """Mark document ``doc_id`` a favourite of the user, or unmark it (the caller
        forgets the view's answer)."""
        await self._client.set_favorite(doc_id, favorite)

    def forget(self, *key: str) -> None:
        """Drop one answer (a favourite marked or unmarked here)."""
        self._kept.pop(key, None)

    def _fresh(self, kept: _Kept) -> bool:
        return self._clock() - kept.asked < self.ttl and kept.generation == self._generation()

    async def _answer(
        self, key: tuple[str, ...], params: dict[str, str], words: str | None, *, view: bool = False
    ) -> Answer:
        kept = self._kept.get(key)
        if kept is not None and self._fresh(kept):
            return kept.answer
        lock = self._locks.setdefault(key, trio.Lock())
        async with lock:
            kept = self._kept.get(key)
            if kept is not None and self._fresh(kept):
                return kept.answer  # asked by another task meanwhile
            generation, asked = self._generation(), self._clock()
            records, cut = await self._rows(params, view)
            answer = Answer(tuple(hits_of(records, words)), time.time(), cut)
            log.debug("%s: %d document(s) from %d row(s)", " ".join(key), len(answer.hits),
                      len(records))  # fmt: skip
            self._kept[key] = _Kept(answer, asked, generation)
            self._kept.move_to_end(key)
            while len(self._kept) > _KEPT:
                old, _ = self._kept.popitem(last=False)
                self._locks.pop(old, None)
            return answer

    async def _rows(self, params: dict[str, str], view: bool) -> tuple[list[dict[str, Any]], bool]:
        """Every row of the list call (pages of 200), and whether they were cut; each
        page of a ``view`` is a walk's when a walk lists it (the root lists the views)."""
        records: list[dict[str, Any]] = []
        for number in range(_MAX_PAGES):
            if view:
                self._walks.spend(f"page {number + 1} of the view {params['named_filter']}")
            page = await self._client.list_documents(start=len(records), limit=PAGE_LIMIT, **params)
            records += page.documents
            total = page.total
            if len(page.documents) < PAGE_LIMIT or (total is not None and len(records) >= total):
                return records, False
        log.warning("%s: more than %d matches; the first %d shown", params, len(records),
                    len(records))  # fmt: skip
        return records, True
