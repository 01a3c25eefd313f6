"""The core against a fake vault: tree, attributes, reads, xattrs, status, errors."""

from __future__ import annotations

import errno
import json
import os
import stat

import pytest

from vaultfs import errors
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.inodes import ROOT_INODE
from vaultfs.bridge.nodes.search import VIEWS

from .fakevault import FakeVault
from .fsdriver import listdir, read_all, walk


async def test_the_tree_follows_types_subtypes_and_disambiguates(core: FileSystem) -> None:
    root = await listdir(core, ROOT_INODE)
    # .vaultfs and .search: by name only; the views are listed (nodes.search)
    assert set(root) == {"Promotional Piece", "Reference", *VIEWS}
    assert all(stat.S_ISDIR(mode) for mode in root.values())
    assert set(await listdir(core, await walk(core, "Promotional Piece"))) == {"Brochure"}
    assert set(await listdir(core, await walk(core, "Promotional Piece", "Brochure"))) == {
        "Brochure A"
    }
    reference = await listdir(core, await walk(core, "Reference"))
    assert set(reference) == {"Guide", "Guide [3]", "..%2F..%2Fetc"}
    doc = await listdir(core, await walk(core, "Reference", "..%2F..%2Fetc"))
    assert set(doc) == {"..%2Fpasswd", "versions", "renditions", "attachments", "relationships"}


async def test_a_source_file_named_hidden_leaves_the_name_to_gnomes_list(
    vault: FakeVault, core: FileSystem
) -> None:
    """A document directory's ``.hidden`` is one node in every document directory
    (a front may answer its lookups without asking, ``shared_entries``): a source file
    of that name is listed under another name, as one named ``versions`` is."""
    vault.add("Dotfile", b"mine\n", filename=".hidden")
    await core.tree.index.refresh()
    doc = await walk(core, "Reference", "Dotfile")
    listed = set(await listdir(core, doc)) - {"versions", "renditions", "attachments"}
    (source,) = listed - {"relationships"}
    assert source != ".hidden" and source.startswith(".hidden")
    assert await read_all(core, await walk(core, "Reference", "Dotfile", source)) == b"mine\n"
    hidden = await walk(core, "Reference", "Dotfile", ".hidden")
    assert await read_all(core, hidden) == b"versions\n"
    assert (await core.shared_entries())[".hidden"].ino == hidden


async def test_listing_folders_costs_no_call_per_document(
    core: FileSystem, vault: FakeVault
) -> None:
    vault.calls.clear()
    for _ in range(2):
        reference = await walk(core, "Reference")
        await listdir(core, reference)
        for name in ("Guide", "Guide [3]"):
            await listdir(core, await walk(core, "Reference", name))
    assert vault.calls["get_document"] == 0
    assert vault.calls["list_documents"] == 0


async def test_reading_a_file_gives_its_exact_content_and_size(
    core: FileSystem, invalidated: list[int]
) -> None:
    ino = await walk(core, "Promotional Piece", "Brochure", "Brochure A", "a.txt")
    before = await core.getattr(ino)
    assert before.size == 6 * 1024 and before.timeout > 0  # size__v estimate (KB)
    # The download's length is known once open returns: the kernel's page cache may be
    # used, after it forgot the estimate.
    opened = await core.open(ino, 0)
    assert not opened.direct_io and not opened.keep_cache
    assert invalidated == [ino]
    await core.release(opened.fh)
    assert await read_all(core, ino) == b"alpha\n" * 1000
    after = await core.getattr(ino)
    assert after.size == 6000 and after.timeout > 0
    assert stat.S_IMODE(after.mode) == 0o644
    assert after.mtime_ns == before.mtime_ns
    # The same content again: the kernel keeps the pages it read.
    again = await core.open(ino, 0)
    assert again.keep_cache and not again.direct_io
    await core.release(again.fh)
    assert invalidated == [ino]


async def test_versions_and_renditions(core: FileSystem, vault: FakeVault) -> None:
    doc = await walk(core, "Reference", "Guide")
    vault.new_version(2, b"guide v2\n")
    # The index has not seen the new version yet: the latest file is still 0.1.
    assert await read_all(core, await walk(core, "Reference", "Guide", "guide.txt")) == b"guide\n"
    await core.tree.index.refresh()
    assert (
        await read_all(core, await walk(core, "Reference", "Guide", "guide.txt")) == b"guide v2\n"
    )
    versions = await listdir(core, (await core.lookup(doc, "versions")).ino)
    assert set(versions) == {"0.1", "0.2"}
    old = await walk(core, "Reference", "Guide", "versions", "0.1", "guide.txt")
    assert await read_all(core, old) == b"guide\n"
    assert stat.S_IMODE((await core.getattr(old)).mode) == 0o444
    pdf = await walk(
        core,
        "Promotional Piece",
        "Brochure",
        "Brochure A",
        "renditions",
        "viewable_rendition__v.pdf",
    )
    assert await read_all(core, pdf) == b"%PDF-a"


async def test_attachments(core: FileSystem, vault: FakeVault) -> None:
    vault.attach(2, "notes.txt", b"some notes")
    vault.rename(2, "Guide")  # bumps the modification date, as adding one does
    await core.tree.index.refresh()
    ino = await walk(core, "Reference", "Guide", "attachments", "notes.txt")
    assert await read_all(core, ino) == b"some notes"


async def test_fields_are_xattrs_without_api_calls(core: FileSystem, vault: FakeVault) -> None:
    doc = await walk(core, "Reference", "Guide")
    vault.calls.clear()
    names = await core.listxattr(doc)
    assert "user.vault.name__v" in names and "user.vault.id" in names
    assert await core.getxattr(doc, "user.vault.name__v") == b"Guide"
    assert await core.getxattr(doc, "user.vault.language__v") == b'["English"]'
    assert await core.getxattr(doc, "user.vault.locked__v") == b"false"
    assert sum(vault.calls.values()) == 0
    with pytest.raises((errors.VaultError, OSError)) as info:
        await core.getxattr(doc, "user.vault.nope")
    assert errors.errno_for(info.value) == errno.ENODATA
    with pytest.raises(errors.NotEditable):
        await core.setxattr(doc, "user.vault.md5checksum__v", b"x")


async def test_unknown_names_and_vanished_documents(core: FileSystem, vault: FakeVault) -> None:
    with pytest.raises((errors.VaultError, OSError)) as info:
        await core.lookup(ROOT_INODE, "nothing here")
    assert errors.errno_for(info.value) == errno.ENOENT
    doc = await walk(core, "Reference", "Guide")
    vault.docs.pop(2)  # gone without a deletion record yet
    with pytest.raises(errors.InvalidDocument):
        await listdir(core, (await core.lookup(doc, "versions")).ino)
    assert 2 not in core.tree.index.documents  # it left the index


async def test_no_access_and_unreachable_vault(core: FileSystem, vault: FakeVault) -> None:
    vault.forbidden.add(2)
    doc = await walk(core, "Reference", "Guide")
    with pytest.raises(errors.InsufficientAccess):
        await listdir(core, (await core.lookup(doc, "versions")).ino)
    cached = await walk(core, "Reference", "Guide [3]", "guide.txt")
    assert await read_all(core, cached) == b"second guide\n"
    uncached = await walk(core, "Promotional Piece", "Brochure", "Brochure A", "a.txt")
    vault.unreachable = True
    # Cached content stays readable; uncached content fails (EIO in the FUSE layer).
    assert await read_all(core, cached) == b"second guide\n"
    with pytest.raises(errors.VaultUnavailable):
        await core.open(uncached, 0)


async def test_status_is_json(core: FileSystem) -> None:
    ino = await walk(core, ".vaultfs", "status")
    status = json.loads(await read_all(core, ino))
    assert status["vault_url"] == "http://vault" and status["user"] == "me"
    assert status["index"]["documents"] == 4
    assert status["api_calls"] > 0
    assert "password" not in json.dumps(status)


async def test_writing_without_a_spool_is_refused(core: FileSystem) -> None:
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    with pytest.raises((errors.VaultError, OSError)) as info:
        await core.open(ino, os.O_WRONLY)
    assert errors.errno_for(info.value) == errno.EROFS
    old = await walk(core, "Reference", "Guide", "versions", "0.1", "guide.txt")
    with pytest.raises((errors.VaultError, OSError)) as info:
        await core.open(old, os.O_RDWR)
    assert errors.errno_for(info.value) == errno.EACCES
