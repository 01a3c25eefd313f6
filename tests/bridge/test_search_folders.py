"""The search folders and views against a fake vault: grouping of rows into documents
and matching versions, answers kept for the poll interval and dropped on an index
change, link texts, refusals as errnos, and a vault without the favourite call."""

from __future__ import annotations

import errno
import logging
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from vaultfs import errors
from vaultfs.bridge.core.build import build_daemon
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.inodes import ROOT_INODE
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.tree.search_results import Hit, SearchResults, hits_of
from vaultfs.client import DocumentPage

from .fakevault import FakeVault
from .fsdriver import listdir, walk


class SearchingVault(FakeVault):
    """The fake vault with answers to searches and named filters set by the test, and
    no favourite call (what an older vault answers: MALFORMED_URL)."""

    def __init__(self) -> None:
        super().__init__()
        #: (search or named filter, scope) -> the rows the vault answers
        self.answers: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
        self.searches: list[dict[str, Any]] = []

    async def list_documents(
        self, *, start: int = 0, limit: int = 200, sort: str | None = None, **params: Any
    ) -> DocumentPage:
        asked = params.get("search") or params.get("named_filter")
        if not asked:
            return await super().list_documents(start=start, limit=limit, sort=sort)
        self._call("list_documents")
        self.searches.append({"start": start, **params})
        rows = self.answers.get((asked, params.get("scope")), [])
        page = [dict(r) for r in rows[start : start + limit]]
        return DocumentPage(page, len(page), start, limit, total=len(rows))

    async def set_favorite(self, doc_id: int, favorite: bool) -> None:
        self._call("set_favorite")
        raise errors.MalformedUrl("Invalid URL: /objects/documents/1/favorite")

    def row(self, doc_id: int, major: int, minor: int, **extra: Any) -> dict[str, Any]:
        return {
            **self.docs[doc_id][-1].record,
            "major_version_number__v": major,
            "minor_version_number__v": minor,
            **extra,
        }


@pytest.fixture
def vault() -> SearchingVault:
    vault = SearchingVault()
    vault.add("Budget 2026", b"plan\n", filename="budget.txt")
    vault.add("Minutes", b"notes\n", filename="minutes.txt")
    vault.new_version(2, b"later notes\n")
    return vault


@pytest.fixture
async def core(vault: SearchingVault, tmp_path: Path) -> AsyncIterator[FileSystem]:
    daemon = build_daemon(
        vault,
        Options(url="http://vault", mountpoint="/m"),
        content_dir=tmp_path / "cache",
        cache_size=1 << 30,
    )
    await daemon.index.build()
    async with trio.open_nursery() as nursery:
        await nursery.start(daemon.blobs.run)
        yield daemon.filesystem
        nursery.cancel_scope.cancel()


def highlight(terms: list[str], major: int, minor: int) -> dict[str, Any]:
    return {"highlight": terms, "major_version_number__v": major, "minor_version_number__v": minor}


def test_rows_become_documents_with_the_versions_every_word_was_found_in() -> None:
    rows = [
        {"id": 7, "major_version_number__v": 0, "minor_version_number__v": 2},
        {"id": 3, "major_version_number__v": 1, "minor_version_number__v": 0},
        {
            "id": 7,
            "major_version_number__v": 0,
            "minor_version_number__v": 1,
            "term_highlights": [
                highlight(["Budget", "2026"], 0, 3),
                highlight(["budget"], 0, 4),
            ],
        },
    ]
    assert hits_of(rows, "budget 2026") == [
        Hit(7, ((0, 1), (0, 2), (0, 3))),  # 0.4 holds one word only
        Hit(3, ((1, 0),)),
    ]
    assert hits_of(rows) == [Hit(7), Hit(3)]  # a view: no versions


async def test_an_answer_is_kept_for_the_poll_interval_and_until_the_index_changes() -> None:
    vault = SearchingVault()
    doc = vault.add("Budget", b"x")
    vault.answers[("budget", "all")] = [vault.row(doc, 0, 1)]
    now = [100.0]
    generation = [1]
    results = SearchResults(
        vault,
        lambda: generation[0],
        ttl=30.0,
        clock=lambda: now[0],
    )
    first = await results.search("budget", content_only=False)
    assert [h.doc_id for h in first.hits] == [doc]
    assert vault.searches == [
        {"start": 0, "search": "budget", "scope": "all", "versionscope": "all"}
    ]
    now[0] += 29
    assert await results.search("budget", content_only=False) is first
    assert len(vault.searches) == 1
    now[0] += 2  # the poll interval passed: asked again
    await results.search("budget", content_only=False)
    assert len(vault.searches) == 2
    generation[0] += 1  # the index saw a change: asked again
    await results.search("budget", content_only=False)
    assert len(vault.searches) == 3
    await results.search("budget", content_only=True)  # another scope: its own answer
    assert vault.searches[-1]["scope"] == "contents"


async def test_a_search_reads_pages_of_200_and_no_more() -> None:
    vault = SearchingVault()
    doc = vault.add("Many", b"x")
    vault.answers[("many", "all")] = [vault.row(doc, 0, n) for n in range(450)]
    results = SearchResults(vault, lambda: 0)
    answer = await results.search("many", content_only=False)
    assert [s["start"] for s in vault.searches] == [0, 200, 400]
    assert answer.hits == (Hit(doc, tuple((0, n) for n in range(450))),)


async def test_search_folders_list_links_to_document_directories(
    core: FileSystem, vault: SearchingVault
) -> None:
    vault.answers[("budget", "all")] = [vault.row(1, 0, 1)]
    vault.answers[("notes", "contents")] = [vault.row(2, 0, 1)]
    assert ".search" not in await listdir(core, ROOT_INODE)
    assert set(await listdir(core, await walk(core, ".search"))) == {"all", "content"}
    found = await listdir(core, await walk(core, ".search", "budget"))
    assert list(found) == ["Budget 2026"] and stat.S_ISLNK(found["Budget 2026"])
    link = await walk(core, ".search", "budget", "Budget 2026")
    assert await core.readlink(link) == "../../Reference/Budget 2026"
    content = await walk(core, ".search", "content", "notes")
    assert list(await listdir(core, content)) == ["Minutes"]
    assert await core.readlink(await walk(core, ".search", "content", "notes", "Minutes")) == (
        "../../../Reference/Minutes"
    )
    assert await core.getxattr(content, "user.vault.search.versions") == b'{"Minutes":["0.1"]}'
    assert await listdir(core, await walk(core, ".search", "nothing")) == {}
    assert (await core.getattr(content)).mode & 0o777 == 0o555


async def test_nothing_but_favourites_is_written_and_a_vault_without_them_says_so(
    core: FileSystem, vault: SearchingVault, caplog: pytest.LogCaptureFixture
) -> None:
    vault.answers[("budget", "all")] = [vault.row(1, 0, 1)]
    search = await walk(core, ".search", "budget")
    with pytest.raises(errors.OperationNotPermitted):
        await core.unlink(search, "Budget 2026")
    with pytest.raises(errors.OperationNotPermitted):
        await core.symlink(search, "x", "../../Reference/Minutes")
    with pytest.raises(errors.OperationNotPermitted):
        await core.rename(search, "Budget 2026", search, "Other", 0)
    mine = await walk(core, "My Documents")
    with pytest.raises(errors.OperationNotPermitted):
        await core.symlink(mine, "x", "../Reference/Minutes")
    favorites = await walk(core, "Favorites")
    assert (await core.getattr(favorites)).mode & 0o777 == 0o755
    with pytest.raises(errors.InvalidData) as refused:
        await core.symlink(favorites, "x", "../Reference")  # a folder, not a document
    assert errors.errno_for(refused.value) == errno.EINVAL
    caplog.set_level(logging.WARNING)
    with pytest.raises(errors.Unsupported) as unsupported:
        await core.symlink(favorites, "x", "/m/Reference/Minutes")
    assert errors.errno_for(unsupported.value) == errno.EOPNOTSUPP
    assert "this vault has no favourite call" in caplog.text
    assert vault.calls["set_favorite"] == 1


async def test_a_type_named_like_a_view_keeps_its_name(
    vault: SearchingVault, tmp_path: Path
) -> None:
    vault.types["favorites__c"] = ("Favorites", {})
    vault.add("Liked", b"x", type_="favorites__c")
    daemon = build_daemon(
        vault,
        Options(url="http://vault"),
        content_dir=tmp_path / "cache",
        cache_size=1 << 30,
    )
    await daemon.index.build()
    root = await listdir(daemon.filesystem, ROOT_INODE)
    assert {"Favorites", "Favorites [view]", "My Documents", "Recent Documents"} <= set(root)
    assert "Liked" in await listdir(daemon.filesystem, await walk(daemon.filesystem, "Favorites"))
