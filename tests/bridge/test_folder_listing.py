"""A folder's listing read from the index a page at a time (``FolderListing``) names
its entries as ``assign_names`` over the whole folder does, finds each by name, and
tells each document's name, without holding the folder."""

from __future__ import annotations

import os
import random

import pytest

from vaultfs.bridge.tree import folder_listing, keys
from vaultfs.bridge.tree.filenames import Sibling, assign_names
from vaultfs.bridge.tree.folder_listing import FolderListing, name_in
from vaultfs.bridge.tree.index_store import IndexStore
from vaultfs.bridge.tree.keys import NodeKey

FOLDER = ("Promotional Piece", "Advertisement", "")


def _record(doc_id: int, name: str, subtype: str = "Advertisement") -> dict[str, object]:
    return {
        "id": doc_id,
        "name__v": name,
        "type__v": "Promotional Piece",
        "subtype__v": subtype,
        "version_modified_date__v": "2026-01-02T03:04:05.678Z",
    }


def _whole(names: dict[int, str], subfolders: list[tuple[str, NodeKey]]) -> dict[str, NodeKey]:
    """The folder named as the tree named it before: all siblings at once."""
    siblings = [Sibling(label, str(key[-1]), (0, str(key[-1]))) for label, key in subfolders]
    children = [key for _, key in subfolders]
    for doc_id, name in sorted(names.items()):
        siblings.append(Sibling(name or str(doc_id), str(doc_id), (1, f"{doc_id:020d}")))
        children.append(keys.document(doc_id))
    return dict(zip(assign_names(siblings), children, strict=True))


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 4 entries, so that groups of one name cross pages."""
    monkeypatch.setattr(folder_listing, "PAGE", 4)


@pytest.mark.parametrize("seed", range(6))
def test_a_folder_is_named_as_a_whole_and_every_name_is_found(seed: int) -> None:
    rng = random.Random(seed)
    pool = ["Ad", "Ad", "Brochure", "50% off", "a/b", "Notes [3]", "", "12", "x" * 300, "Final"]
    names = {doc_id: rng.choice(pool) for doc_id in rng.sample(range(1, 60), 30)}
    names[12] = ""  # an unnamed document listed as "12", beside one named "12"
    store = IndexStore(None)
    store.put_many([_record(i, n) for i, n in names.items()])
    store.put_many([_record(999, "Elsewhere", subtype="Brochure")])  # another folder
    subfolders = [("Final", keys.folder(*FOLDER[:2], "final__c"))]
    listing = FolderListing(store, FOLDER, subfolders)

    expected = _whole(names, subfolders)
    assert dict(listing.items()) == expected
    assert len(listing) == len(expected)
    for name, key in expected.items():
        assert listing[name] == key
        assert name_in(listing, key) == name
    assert "Nothing" not in listing and "Ad [999]" not in listing
    assert os.fsdecode(b"invalid-utf8-\xff") not in listing  # (no label can be it)
    assert listing.name_of(keys.document(999)) is None


def test_a_page_of_one_name_is_read_whole() -> None:
    store = IndexStore(None)
    store.put_many([_record(i, "Same") for i in range(1, 11)])
    listing = FolderListing(store, FOLDER, [])
    names = [name for name, _ in listing.items()]
    assert names == ["Same"] + [f"Same [{i}]" for i in range(2, 11)]
