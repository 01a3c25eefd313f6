"""Relationships against a vault without the cross-document listing: the per-version
listing is asked lazily (when a ``relationships/`` directory is listed), once per change
of the document, and gives the same links."""

from __future__ import annotations

import stat
from typing import Any

from vaultfs.bridge.fs.filesystem import FileSystem

from .fakevault import FakeVault
from .fsdriver import listdir, walk

TYPES = [
    {"value": "references__vs", "label": "References", "singleUse": False},
    {"value": "original_source__v", "label": "Original Source", "singleUse": True},
]


def without_listing(vault: FakeVault, records: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    """Make ``vault`` answer relationship calls as a vault without the extension would;
    returns the list the per-version calls are recorded in."""
    vault.relationship_type_records = TYPES
    vault.relationships = records
    vault.cross_listing = False
    return vault.version_listings


async def test_per_version_listing_when_the_vault_has_no_cross_listing(
    core: FileSystem, vault: FakeVault
) -> None:
    guide, other = 2, 3  # "Guide" and "Guide [3]" of the fixture
    asked = without_listing(
        vault,
        [
            {
                "id": 7,
                "source_doc_id__v": guide,
                "source_major_version__v": 0,
                "source_minor_version__v": 1,
                "target_doc_id__v": other,
                "relationship_type__v": "references__vs",
                "created_date__v": "2024-01-02T00:00:00.000Z",
            }
        ],
    )
    doc = await walk(core, "Reference", "Guide")
    assert "relationships" in await listdir(core, doc)
    assert asked == []  # listing the document asks nothing about relationships
    types = await listdir(core, await walk(core, "Reference", "Guide", "relationships"))
    assert set(types) == {"References"}  # the types in use; the others by name only
    assert await walk(core, "Reference", "Guide", "relationships", "Original Source")
    references = await walk(core, "Reference", "Guide", "relationships", "References")
    links = await listdir(core, references)
    # Named by the target's name; it points at the target's directory, whatever its name.
    assert set(links) == {"Guide"}
    assert stat.S_ISLNK(links["Guide"])
    assert asked == [(guide, 0, 1)]
    assert vault.calls["list_all_relationships"] == 1  # asked once, then never again
    link = await walk(core, "Reference", "Guide", "relationships", "References", "Guide")
    assert await core.readlink(link) == "../../../Guide [3]"
    assert (await core.getattr(link)).size == len("../../../Guide [3]")
    # Cached until the document changes.
    await listdir(core, references)
    other_doc = await walk(core, "Reference", "Guide [3]", "relationships", "References")
    assert await listdir(core, other_doc) == {}  # incoming relationships are not shown
    assert asked == [(guide, 0, 1), (other, 0, 1)]
    assert vault.calls["list_all_relationships"] == 1
