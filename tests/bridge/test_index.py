"""The index: one call per 200 documents cold, cheap incremental refresh, deletions."""

from __future__ import annotations

import trio
import trio.testing

from vaultfs.bridge.tree.index import DocumentIndex, TypeCatalog

from .fakevault import FakeVault


async def test_cold_build_reads_one_page_per_200_documents() -> None:
    vault = FakeVault()
    for i in range(450):
        vault.add(f"doc {i}")
    index = DocumentIndex(vault)
    await index.build()
    assert len(index.documents) == 450
    assert vault.calls["list_documents"] == 3
    assert index.ready.is_set()


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
