"""The document index: every document's latest record, kept fresh cheaply.

Owns the one list of all documents the tree is built from. The index is built from list pages
of 200 sorted by ``version_modified_date__v desc`` and refreshed incrementally: pages
are read newest-modified first until a page holds only records already known with the
same modification date, then deletions since the last poll are applied, all in one
transaction of the ``IndexStore`` (on disk for a mount, so a new mount catches up
instead of reading every page again). Nothing secret is kept.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import trio

from vaultfs import errors
from vaultfs.bridge.tree.index_store import IndexStore, Records
from vaultfs.client import DocumentPage, VaultApi
from vaultfs.wire import PAGE_LIMIT

__all__ = ["DocumentIndex"]

log = logging.getLogger(__name__)

SORT = "version_modified_date__v desc"
#: pages a build asks for at once
BUILD_CONCURRENCY = 4
#: the share of the vault's burst limit a build allows itself: once the vault's
#: remainder falls below the rest, pages are asked for at that share's pace (the rest
#: stays with the vault's other users and with this mount's own requests)
BUILD_SHARE = 0.25
#: the vault's burst window (the spec: 5 minutes)
BURST_WINDOW = 300.0
#: how long the vault keeps deletions (the spec): an index polled longer ago is built again
DELETIONS_KEPT = timedelta(days=30)
#: deletions are asked for with this overlap, so clock skew cannot hide one
_DELETION_OVERLAP = timedelta(minutes=2)

Record = dict[str, Any]


class DocumentIndex:
    """All documents the user may see: id -> latest record (the list's inner record),
    kept in an ``IndexStore`` (on disk for a mount) and caught up at start."""

    def __init__(
        self,
        client: VaultApi,
        *,
        page_size: int = PAGE_LIMIT,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        store: IndexStore | None = None,
        concurrency: int = BUILD_CONCURRENCY,
    ) -> None:
        self._client = client
        self._page_size = page_size
        self._now = now
        self._concurrency = max(1, concurrency)
        self.store = store if store is not None else IndexStore(None)
        self.documents = Records(self.store)
        #: bumped on every change, so views built from the index know when to rebuild
        self.generation = 0
        self.ready = trio.Event()
        self.last_refresh: float | None = None
        #: polls asked for out of turn (``poll_now``), and the last of them answered
        self.polls_asked = 0
        self.polls_answered = 0
        #: why the last poll failed (None: it did not)
        self.poll_error: str | None = None
        #: a build's progress: documents written of the list's total (None: not known)
        self.indexed = 0
        self.total: int | None = None
        self._build_clock: float | None = None
        self._attempt_done = trio.Event()
        self._poked = trio.Event()
        self._last_poll: datetime | None = None
        self._seen_deletions: set[tuple[int, str]] = set()
        #: one refresh at a time (the poller and a check-in may both ask)
        self._refreshing = trio.Lock()
        #: called with the id of each document that changed or left (caches drop it)
        self.on_change: list[Callable[[int], None]] = []
        #: called with the id of a document whose listings changed, not its record
        self.on_relist: list[Callable[[int], None]] = []
        #: doc id -> monotonic time this mount last put its own change of it: a page
        #: asked for before that is older than what the mount shows, and is not taken
        self._own_change: dict[int, float] = {}
        self._build = int(self.store.meta("build") or 0)
        #: paced pages of a build go one at a time
        self._share_lock = trio.Lock()

    def get(self, doc_id: int) -> Record | None:
        return self.documents.read_ahead(doc_id)

    def start_reason(self) -> str | None:
        """Why the index on disk cannot be caught up and must be built from the start
        (None: it can)."""
        if self.store.set_aside is not None:
            return self.store.set_aside
        if self.store.meta("complete") != "1":
            if self.store.meta("build_started") is not None:
                return "an interrupted build (pages of a moving list cannot be resumed)"
            return "no index yet"
        last = self.store.meta("last_poll")
        try:
            when = datetime.fromisoformat(last) if last else None
        except ValueError:
            when = None
        if when is None:
            return "no time of the last poll"
        if self._now() - when > DELETIONS_KEPT:
            return f"the last poll ({last}) is older than the vault keeps deletions"
        self._last_poll = when
        return None

    async def build(self) -> None:
        """Read every page (one call per 200 documents, a few at a time), writing each
        as it arrives, then drop what the build did not see."""
        started = self._now()
        self._build += 1
        build = self._build
        self.store.put_many(
            (), meta={"complete": "0", "build": str(build), "build_started": started.isoformat()}
        )
        self.indexed = 0
        self._build_clock = time.monotonic()
        first = await self._page(0)
        # The total as the vault says it (responseDetails.total, else the answer's size).
        self.total = first.total if first.total is not None else first.size
        self._write_page(first.documents, build)
        last_full = len(first.documents) == self._page_size
        start = self._page_size
        starts = list(range(start, self.total, self._page_size)) if last_full else []
        if starts:
            limiter = trio.Semaphore(self._concurrency)
            fulls: dict[int, bool] = {}

            async def fetch(start: int) -> None:
                async with limiter:
                    await self._within_share()
                    page = await self._page(start)
                self._write_page(page.documents, build)
                fulls[start] = len(page.documents) == self._page_size

            async with trio.open_nursery() as nursery:
                for each in starts:
                    nursery.start_soon(fetch, each)
            last_full = fulls[starts[-1]]
            start = starts[-1] + self._page_size
        while last_full:  # the list is longer than said (or grew while it was read)
            await self._within_share()
            page = await self._page(start)
            self._write_page(page.documents, build)
            last_full = len(page.documents) == self._page_size
            start += self._page_size
        gone = self.store.finish_build(build, {"complete": "1", "last_poll": started.isoformat()})
        self.documents.forget(gone)
        spent = time.monotonic() - (self._build_clock or time.monotonic())
        log.info("index: built, %d documents in %.1f s", len(self.store), spent)
        self._finish(started, set(gone), force=True)

    async def _within_share(self) -> None:
        """Wait before a build's next page while the vault's burst remainder is below
        what the build leaves to others (``BUILD_SHARE``): then a page per
        ``BURST_WINDOW / (share of the limit)`` seconds, one at a time."""
        budget = self._client.budget
        limit, remaining = budget.burst_limit_seen, budget.burst_remaining
        if not limit or remaining is None or remaining >= limit * (1 - BUILD_SHARE):
            return
        async with self._share_lock:
            await trio.sleep(BURST_WINDOW / max(1.0, limit * BUILD_SHARE))

    async def _page(self, start: int) -> DocumentPage:
        return await self._client.list_documents(start=start, limit=self._page_size, sort=SORT)

    def _write_page(self, records: list[Record], build: int) -> None:
        changed = [int(r["id"]) for r in records if self.documents.get(int(r["id"])) != r]
        self.store.put_many(records, build=build)
        self.documents.forget(changed)
        before, self.indexed = self.indexed, self.indexed + len(records)
        if self.total and self.indexed * 10 // self.total > before * 10 // self.total:
            # The progress line (the foreground mount and the demo print it).
            done = min(self.indexed, self.total)
            left = self.seconds_left()
            log.info(
                "index: %d of %d documents (%d %%)%s",
                done,
                self.total,
                done * 100 // self.total,
                f", about {left:.0f} s left" if left is not None and done < self.total else "",
            )
        for doc_id in changed:
            for callback in self.on_change:
                callback(doc_id)

    async def refresh(self) -> set[int]:
        """Bring the index up to date incrementally; returns the ids that changed."""
        async with self._refreshing:
            return await self._refresh()

    async def _refresh(self) -> set[int]:
        if not self.ready.is_set():
            reason = self.start_reason()
            if reason is not None:
                log.info("index: building from the start: %s", reason)
                await self.build()
                return set()
            log.info("index: catching up since %s", self._last_poll)
        catching_up = not self.ready.is_set()
        started = self._now()
        asked = time.monotonic()
        changed: dict[int, Record] = {}
        start = 0
        while True:
            page = await self._page(start)
            all_known = True
            for record in page.documents:
                doc_id = int(record["id"])
                if self._own_change.get(doc_id, -math.inf) >= asked:
                    continue  # the mount changed it after this page was asked for
                old = self.documents.get(doc_id)
                if old is None or old.get("version_modified_date__v") != record.get(
                    "version_modified_date__v"
                ):
                    all_known = False
                if old != record:
                    changed[doc_id] = record
            start += len(page.documents)
            if all_known or len(page.documents) < self._page_size:
                break
        gone = await self._deletions(changed)
        # The mount's own changes made while the pages were read (a check-in, an unlock
        # answered after its page came) are newer than the pages: they stay.
        changed = {
            doc_id: record
            for doc_id, record in changed.items()
            if self._own_change.get(doc_id, -math.inf) < asked
        }
        # All or nothing: a kill before this line leaves the index as the last poll left it.
        self.store.put_many(
            changed.values(), gone, build=self._build, meta={"last_poll": started.isoformat()}
        )
        self.documents.forget([*changed, *gone])
        self._finish(started, set(changed) | gone)
        if catching_up:
            log.info(
                "index: caught up, %d documents (%d changed, %d gone)",
                len(self.documents),
                len(changed),
                len(gone),
            )
        return set(changed) | gone

    async def _deletions(self, changed: dict[int, Record]) -> set[int]:
        """Documents gone since the last poll (their ids); records of documents that
        lost one version only are put in ``changed``."""
        since = self._last_poll - _DELETION_OVERLAP if self._last_poll else None
        gone: set[int] = set()
        for record in await self._client.deleted_documents(since=since):
            try:
                doc_id = int(record["id"])
            except (KeyError, TypeError, ValueError):
                continue
            mark = (doc_id, str(record.get("date_deleted")))
            if mark in self._seen_deletions or doc_id not in self.documents:
                continue
            self._seen_deletions.add(mark)
            # A deletion record may name one version only: ask whether the document
            # itself is gone (rare, so one call each is cheap).
            try:
                response = await self._client.get_document(doc_id)
            except errors.InvalidDocument:
                gone.add(doc_id)
                changed.pop(doc_id, None)
            else:
                document = response.get("document")
                if isinstance(document, dict):
                    changed[doc_id] = document
        return gone

    def put(self, record: Record, *, own: bool = False) -> None:
        """Learn a document's latest record now (after the bridge changed it), rather
        than at the next poll; ``own``: the mount's own change, which a poll already
        under way must not undo."""
        doc_id = int(record["id"])
        if own:
            self._own_change[doc_id] = time.monotonic()
        if self.documents.get(doc_id) != record:
            self.store.put_many([record], build=self._build)
            self.documents.forget([doc_id])
            self._finish(None, {doc_id})

    def changed_here(self, doc_id: int) -> None:
        """What this mount holds of the document changed without its record changing (a
        check-out of its own began): its listings are made again (``on_relist``), what
        else was read of it stays."""
        for callback in self.on_relist:
            callback(doc_id)

    def forget(self, doc_id: int) -> None:
        """Drop a document the vault says does not exist (INVALID_DOCUMENT)."""
        if doc_id in self.documents:
            self.store.put_many((), [doc_id])
            self.documents.forget([doc_id])
            self._finish(None, {doc_id})

    def seconds_left(self) -> float | None:
        """A build's time left at the pace so far (None: no build, or no pace yet)."""
        if self.ready.is_set() or self._build_clock is None or not self.total:
            return None
        if not self.indexed:
            return None
        spent = time.monotonic() - self._build_clock
        return max(0.0, spent * (self.total - self.indexed) / self.indexed)

    async def wait_ready(self) -> None:
        """Wait for the first reading of the index; raises the vault's error when an
        attempt at it failed (a build under way is waited for, however long)."""
        while not self.ready.is_set():
            await self._attempt_done.wait()
            if not self.ready.is_set() and self.poll_error is not None:
                raise errors.VaultUnavailable(
                    f"the document index could not be read: {self.poll_error}"
                )

    def _finish(self, started: datetime | None, changed: set[int], *, force: bool = False) -> None:
        if started is not None:
            self._last_poll = started
            self.last_refresh = time.monotonic()
        if changed or force:
            self.generation += 1
            for doc_id in changed:
                for callback in self.on_change:
                    callback(doc_id)
        self.ready.set()

    async def run(
        self, interval: float, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Build, then refresh every ``interval`` seconds, or at once when asked
        (``poll_now``); errors are logged, not fatal."""
        task_status.started()
        while True:
            asked = self.polls_asked
            try:
                changed = await self.refresh()
                self.poll_error = None
                if changed:
                    log.info("index: %d document(s) changed", len(changed))
            except errors.VaultError as exc:
                self.poll_error = str(exc)
                if isinstance(exc, errors.VaultOffline):
                    self._serve_kept()
                else:
                    log.warning("index refresh failed: %s", exc)
            self.polls_answered = asked
            self._attempt_done.set()
            self._attempt_done = trio.Event()
            with trio.move_on_after(interval):
                await self._poked.wait()
            self._poked = trio.Event()

    def _serve_kept(self) -> None:
        """The vault cannot be reached: a kept index serves as it is (offline), until a
        refresh after the vault is back catches it up."""
        if self.ready.is_set() or self.store.meta("complete") != "1":
            return
        log.info("index: offline, serving the kept index (%d documents)", len(self.documents))
        self.ready.set()

    def poll_now(self) -> None:
        """Look for the vault's changes now rather than at the next poll (``vaultfs
        refresh``); a poll under way is followed by another."""
        self.polls_asked += 1
        self._poked.set()
