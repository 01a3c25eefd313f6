"""The index: one call per 200 documents cold, cheap incremental refresh, deletions."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from unittest.mock import patch

import trio
import trio.testing

from vaultfs.bridge.tree.catalog import TypeCatalog
from vaultfs.bridge.tree.index import DocumentIndex
from vaultfs.bridge.tree.index_store import SCHEMA_VERSION, IndexStore, Records
from vaultfs.wire import time_ns

from .fakevault import FakeVault

_TIME_FIELDS = (
    "version_modified_date__v",
    "version_creation_date__v",
    "document_creation_date__v",
)


async def test_cold_build_reads_one_page_per_200_documents() -> None:
    vault = FakeVault()
    for i in range(450):
        vault.add(f"doc {i}")
    index = DocumentIndex(vault)
    await index.build()
    assert len(index.documents) == 450
    assert vault.calls["list_documents"] == 3
    assert index.ready.is_set()
    assert index.indexed == index.total == 450 and index.seconds_left() is None


async def test_refresh_with_nothing_new_costs_one_page_and_one_deletion_call() -> None:
    vault = FakeVault()
    for i in range(450):
        vault.add(f"doc {i}")
    index = DocumentIndex(vault)
    await index.build()
    vault.calls.clear()
    assert await index.refresh() == set()
    assert vault.calls == {"list_documents": 1, "deleted_documents": 1}


async def test_refresh_picks_up_changed_and_new_documents() -> None:
    vault = FakeVault()
    ids = [vault.add(f"doc {i}") for i in range(300)]
    index = DocumentIndex(vault, page_size=100)
    await index.build()
    generation = index.generation
    vault.rename(ids[0], "renamed")  # the oldest document becomes the newest
    new = vault.add("brand new")
    vault.calls.clear()
    changed = await index.refresh()
    assert changed == {ids[0], new}
    assert index.documents[ids[0]]["name__v"] == "renamed"
    assert index.generation > generation
    # The changes sit on the first page; the second page is known ground.
    assert vault.calls["list_documents"] == 2


async def test_deleted_documents_leave_the_index_once() -> None:
    vault = FakeVault()
    keep, gone = vault.add("keep"), vault.add("gone")
    index = DocumentIndex(vault)
    seen: list[int] = []
    index.on_change.append(seen.append)
    await index.build()
    vault.delete(gone)
    assert gone in await index.refresh()
    assert set(index.documents) == {keep}
    assert gone in seen
    vault.calls.clear()
    await index.refresh()
    assert vault.calls["get_document"] == 0  # the same deletion is not asked about again


async def test_type_labels_are_read_once() -> None:
    vault = FakeVault()
    catalog = TypeCatalog(vault)
    labels = await catalog.type_labels()
    assert labels["promotional_piece__c"] == "Promotional Piece"
    assert (await catalog.subtype_labels("promotional_piece__c")) == {"brochure__c": "Brochure"}
    await catalog.type_labels()
    await catalog.subtype_labels("promotional_piece__c")
    assert vault.calls["document_types"] == 1 and vault.calls["document_type"] == 1


async def test_records_stay_equal_to_what_the_vault_sent() -> None:
    vault = FakeVault()
    ids = [vault.add(f"doc {i}") for i in range(3)]
    for doc_id in ids:
        vault.docs[doc_id][-1].record["owner__v"] = {"users": [2], "groups": []}
    index = DocumentIndex(vault)
    await index.build()
    first, second = index.documents[ids[0]], index.documents[ids[1]]
    assert first["owner__v"] == second["owner__v"] == {"users": [2], "groups": []}
    assert first == vault.docs[ids[0]][-1].record  # equal to what the vault sent, as before
    vault.rename(ids[0], "renamed")
    assert await index.refresh() == {ids[0]}  # nothing else looks changed
    assert index.documents[ids[0]]["name__v"] == "renamed"
    assert index.documents[ids[1]]["name__v"] == "doc 1"


async def test_a_poll_asked_for_out_of_turn_runs_at_once_and_is_answered() -> None:
    vault = FakeVault()
    vault.add("first")
    index = DocumentIndex(vault)
    async with trio.open_nursery() as nursery:
        await nursery.start(index.run, 3600)  # an interval no test waits for
        await index.ready.wait()
        vault.add("made elsewhere")
        index.poll_now()
        await trio.testing.wait_all_tasks_blocked()  # the poll ran, the loop waits again
        assert {r["name__v"] for r in index.documents.values()} == {"first", "made elsewhere"}
        assert index.polls_asked == index.polls_answered == 1 and index.poll_error is None
        nursery.cancel_scope.cancel()


async def test_an_index_on_disk_is_caught_up_not_built_again(tmp_path: Path) -> None:
    vault = FakeVault()
    ids = [vault.add(f"doc {i}") for i in range(450)]
    path = tmp_path / "index.sqlite"
    first = DocumentIndex(vault, store=IndexStore(path, vault_url="http://v", user="u"))
    await first.refresh()
    assert vault.calls["list_documents"] == 3 and (path.stat().st_mode & 0o777) == 0o600
    first.store.close()
    vault.rename(ids[0], "renamed")
    vault.delete(ids[1])
    vault.calls.clear()
    second = DocumentIndex(vault, store=IndexStore(path, vault_url="http://v", user="u"))
    assert second.start_reason() is None
    await second.refresh()
    assert vault.calls["list_documents"] == 2  # the changed page and the next, not three
    assert second.documents[ids[0]]["name__v"] == "renamed" and ids[1] not in second.documents
    assert len(second.documents) == 449 and second.ready.is_set()


def test_another_users_or_schemas_or_a_corrupt_index_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    IndexStore(path, vault_url="http://v", user="u").close()
    other = IndexStore(path, vault_url="http://v", user="someone else")
    assert other.set_aside is not None and "another user" in other.set_aside
    other.close()
    path.write_bytes(b"garbage" * 1000)
    for side in tmp_path.glob("index.sqlite-*"):
        side.unlink()
    broken = IndexStore(path, vault_url="http://v", user="u")
    assert broken.set_aside is not None and list(tmp_path.glob("index.sqlite.corrupt-*"))
    assert DocumentIndex(FakeVault(), store=broken).start_reason() == broken.set_aside


async def test_an_index_polled_before_the_deletion_window_is_built_again(tmp_path: Path) -> None:
    vault = FakeVault()
    vault.add("one")
    store = IndexStore(tmp_path / "index.sqlite", vault_url="http://v", user="u")
    index = DocumentIndex(vault, store=store)
    await index.refresh()
    store.set_meta("last_poll", "2000-01-01T00:00:00+00:00")
    again = DocumentIndex(vault, store=store)
    assert "older than the vault keeps deletions" in (again.start_reason() or "")


_SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (
    id INTEGER PRIMARY KEY, type TEXT NOT NULL, subtype TEXT NOT NULL,
    classification TEXT NOT NULL, name TEXT NOT NULL, modified TEXT NOT NULL,
    build INTEGER NOT NULL, record TEXT NOT NULL
);
CREATE INDEX documents_folder ON documents (type, subtype, classification);
CREATE INDEX documents_build ON documents (build);
"""


def test_an_index_of_schema_1_is_brought_up_to_date_in_place(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    record = {
        "id": 7,
        "name__v": "Seven",
        "type__v": "General",
        "version_modified_date__v": "2026-01-02T03:04:05.678Z",
        "version_creation_date__v": "2026-01-02T03:04:05.000Z",
        "document_creation_date__v": "2025-12-31T00:00:00.000Z",
    }
    with sqlite3.connect(path) as db:
        db.executescript(_SCHEMA_1)
        db.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("schema", "1"), ("vault_url", "http://v"), ("user", "u"), ("complete", "1")],
        )
        db.execute(
            "INSERT INTO documents VALUES (7, 'General', '', '', 'Seven', ?, 1, ?)",
            (record["version_modified_date__v"], json.dumps(record)),
        )
    store = IndexStore(path, vault_url="http://v", user="u")
    assert store.set_aside is None and store.meta("schema") == str(SCHEMA_VERSION)
    assert store.get(7) == record  # the records stay: no build from the start
    times = tuple(time_ns(record[f]) for f in _TIME_FIELDS)
    assert list(store.times([7])) == [(7, times)]
    assert store.times_from(7, 10) == [(7, times)]
    assert list(store.folders()) == [("General", "", "", record["version_modified_date__v"])]
    store.close()


def test_a_documents_times_are_read_with_those_after_it_in_its_folder() -> None:
    """A program that stats a folder's entries one by one asks in the listing's order:
    one query reads the times of the next ones too."""
    store = IndexStore(None)
    store.put_many(
        {
            "id": n,
            "name__v": f"doc {n % 50:02d}",  # two documents of each name
            "type__v": "General" if n < 100 else "Other",
            "version_modified_date__v": f"2026-01-01T00:00:{n % 60:02d}.000Z",
        }
        for n in range(110)
    )
    listed = [doc_id for doc_id, _ in store.names_after(("General", "", ""), None, 200)]
    start = listed.index(51)
    ahead = store.times_from(51, 5)
    assert [doc_id for doc_id, _ in ahead] == listed[start : start + 5]
    assert all(times[0] == time_ns(f"2026-01-01T00:00:{d % 60:02d}.000Z") for d, times in ahead)
    assert [d for d, _ in store.times_from(listed[-1], 5)] == [listed[-1]]  # its folder's last
    assert store.times_from(1000, 5) == []
    records = Records(store, times=16)
    assert records.times(51) == ahead[0][1]
    with patch.object(store, "times_from", side_effect=AssertionError("read again")):
        assert [records.times(d) for d in listed[start + 1 : start + 5]] == [
            t for _, t in ahead[1:]
        ]


def test_a_listings_page_reads_its_documents_times_together() -> None:
    """A page of a folder's listing: the times of its documents in one query from the
    folder index, those it missed by id; None for a document not in the index. Times
    kept stay readable without a query until newer ones push them out."""
    store = IndexStore(None)
    store.put_many(
        {
            "id": n,
            "name__v": f"doc {n:03d}",
            "type__v": "General",
            "version_modified_date__v": f"2026-01-01T00:00:{n % 60:02d}.000Z",
        }
        for n in range(1, 301)
    )
    records = Records(store, times=512)
    page = [doc_id for doc_id, _ in store.names_after(("General", "", ""), None, 200)]
    with (
        patch.object(store, "times_from", wraps=store.times_from) as ahead,
        patch.object(store, "times", wraps=store.times) as by_id,
    ):
        found = records.times_of([*page, 9999])
    assert (ahead.call_count, by_id.call_count) == (1, 1)  # the page, then the one missed
    assert found[:-1] == [records.times(d) for d in page] and found[-1] is None
    assert found[0] is not None and found[0][0] == time_ns("2026-01-01T00:00:01.000Z")
    with patch.object(store, "times_from", side_effect=AssertionError("read again")):
        assert records.times_of(page[:10]) == found[:10]
    records.times_of(list(range(201, 301)))  # 100 more: what was kept first is kept still
    with patch.object(store, "times_from", side_effect=AssertionError("read again")):
        assert records.times(page[0]) == found[0]
    records.times_of(list(range(201, 301)))
    records.forget([page[0]])
    assert records.times(page[0]) == found[0]  # read again after a change


def test_a_walk_backwards_through_a_folder_reads_its_records_and_times_in_windows() -> None:
    """GNOME Files counts a folder's sub-folders partly from the last up: what is read
    with one document includes some before it, so that such a walk costs a query per
    window, not one per document."""
    store = IndexStore(None)
    store.put_many(
        {"id": n, "name__v": f"doc {n:03d}", "type__v": "General", "filename__v": f"{n}.txt"}
        for n in range(1, 201)
    )
    records = Records(store, times=64)  # times read 32 at a time: 8 before, 24 from on
    with (
        patch.object(store, "texts_from", wraps=store.texts_from) as texts,
        patch.object(store, "times_from", wraps=store.times_from) as times,
    ):
        for doc_id in range(200, 100, -1):
            assert records.read_ahead(doc_id)["filename__v"] == f"{doc_id}.txt"
            assert records.times(doc_id) is not None
    # 100 documents backwards, each read bringing the one asked for and the 16 records
    # (8 times) before it: ceil(100 / 17) and ceil(100 / 9) reads, not 100 each
    assert (texts.call_count, times.call_count) == (6, 12)


def test_the_folders_are_each_folder_once_with_its_latest_change() -> None:
    store = IndexStore(None)
    where = [("A", "", ""), ("A", "s", ""), ("A", "s", "c"), ("B", "", "")]
    store.put_many(
        {
            "id": n,
            "type__v": where[n % 4][0],
            "subtype__v": where[n % 4][1],
            "classification__v": where[n % 4][2],
            "version_modified_date__v": f"2026-01-01T00:00:{n:02d}.000Z",
        }
        for n in range(40)
    )
    assert list(store.folders()) == [
        (*folder, f"2026-01-01T00:00:{36 + n:02d}.000Z") for n, folder in enumerate(where)
    ]


def test_a_damaged_index_a_mount_did_not_close_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    store = IndexStore(path, vault_url="http://v", user="u")
    store.put_many({"id": n, "name__v": "x" * 2000} for n in range(200))
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert store.meta("open_by") is not None  # left there: the mount "crashed"
    size = path.stat().st_size
    with open(path, "r+b") as raw:  # a page of records overwritten, the header intact
        raw.seek(size // 2)
        raw.write(b"\xff" * 8192)
    again = IndexStore(path, vault_url="http://v", user="u")
    assert again.set_aside is not None  # found by the check a crash calls for
    assert list(tmp_path.glob("index.sqlite.corrupt-*"))
    again.close()  # a clean close: the next open has nothing to check
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'open_by'").fetchone() is None


async def test_a_build_keeps_to_its_share_of_the_burst_limit(autojump_clock: object) -> None:
    vault = FakeVault()
    for i in range(950):
        vault.add(f"doc {i}")
    # The vault says 100 calls of 400 are left: less than the 3/4 a build leaves others.
    vault.budget.burst_limit_seen, vault.budget.burst_remaining = 400, 100
    index = DocumentIndex(vault)
    started = trio.current_time()
    await index.build()
    assert vault.calls["list_documents"] == 5  # the floor still: one call per page
    # The first page is asked at once, the 4 others one per 300 s / (400 / 4) = 3 s.
    assert trio.current_time() - started >= 4 * 3.0
    vault.budget.burst_remaining = 400  # a full budget: no wait at all
    again = DocumentIndex(vault)
    started = trio.current_time()
    await again.build()
    assert trio.current_time() == started


async def test_an_own_change_made_while_a_refresh_reads_stays() -> None:
    """A check-in or unlock answered after its page came (the page still says locked)
    is not undone when the refresh ends."""
    vault = FakeVault()
    doc_id = vault.add("held")
    index = DocumentIndex(vault)
    await index.build()
    vault.rename(doc_id, "changed elsewhere")  # the page will carry it
    deleted_documents = vault.deleted_documents

    async def unlock_meanwhile(*args: object, **kwargs: object) -> object:
        index.put({**index.documents[doc_id], "name__v": "the mount's own"}, own=True)
        return await deleted_documents(*args, **kwargs)

    vault.deleted_documents = unlock_meanwhile  # type: ignore[method-assign]
    await index.refresh()
    assert index.documents[doc_id]["name__v"] == "the mount's own"
