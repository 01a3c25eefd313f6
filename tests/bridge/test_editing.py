"""The write half of the core against a fake vault and the real spool: check-out and
check-in, scratch files and rename-over, new documents, fields, deletion."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from vaultfs import errors
from vaultfs.bridge.core.build import SpoolSettings, build_daemon
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.inodes import ROOT_INODE
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.write.spool.spool import Spool

from .fakevault import FakeVault

ORIGINAL = b"original content\n"


@dataclass
class Setup:
    core: FileSystem
    vault: FakeVault
    spool: Spool
    doc_id: int


async def _setup(tmp_path: Path, *, allow_delete: bool = False) -> AsyncIterator[Setup]:
    vault = FakeVault()
    doc_id = vault.add("Guide", ORIGINAL, filename="guide.txt")
    vault.new_version(doc_id, ORIGINAL + b"v2\n")
    vault.new_version(doc_id, ORIGINAL)
    daemon = build_daemon(
        vault,
        Options(allow_delete=allow_delete),
        content_dir=tmp_path / "cache",
        cache_size=1 << 20,
        spool=SpoolSettings(tmp_path / "spool", retry_initial=60, uploads=False),
    )
    await daemon.index.build()
    spool = daemon.spool
    assert spool is not None
    async with trio.open_nursery() as nursery:
        await nursery.start(daemon.blobs.run)
        await nursery.start(spool.run)
        yield Setup(daemon.filesystem, vault, spool, doc_id)
        nursery.cancel_scope.cancel()


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    async for s in _setup(tmp_path):
        yield s


@pytest.fixture
async def deleting(tmp_path: Path) -> AsyncIterator[Setup]:
    async for s in _setup(tmp_path, allow_delete=True):
        yield s


async def walk(core: FileSystem, *names: str) -> int:
    ino = ROOT_INODE
    for name in names:
        ino = (await core.lookup(ino, name)).ino
    return ino


async def names(core: FileSystem, ino: int) -> set[str]:
    fh = await core.opendir(ino)
    try:
        return {name for _, name, _, _ in await core.readdir(fh, 0)}
    finally:
        core.releasedir(fh)


def latest(vault: FakeVault, doc_id: int) -> bytes:
    return vault.docs[doc_id][-1].content


async def write_file(core: FileSystem, parent: int, name: str, data: bytes) -> None:
    opened, _ = await core.create(parent, name, 0o644, os.O_WRONLY | os.O_CREAT)
    await core.write(opened.fh, 0, data)
    await core.flush(opened.fh)
    await core.release(opened.fh)


def calls_after_walk(vault: FakeVault) -> int:
    return sum(n for op, n in vault.calls.items() if op not in ("lock", "unlock", "get_lock"))


async def test_edit_in_place_checks_in_once_on_the_last_close(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    first = await core.open(ino, os.O_RDWR)
    second = await core.open(ino, os.O_WRONLY)
    assert vault.locks == {} and sum(vault.calls.values()) == calls_after_walk(vault)
    assert await core.read(first.fh, 0, 8) == b"original"  # the vault's, before a write
    assert await core.write(first.fh, 0, b"CHANGED") == 7  # the first write checks out
    assert vault.locks == {setup.doc_id: 1}
    reader = await core.open(ino, os.O_RDONLY)
    assert await core.read(reader.fh, 0, 7) == b"CHANGED"  # readers see the writer's bytes
    await core.release(reader.fh)
    await core.flush(first.fh)  # not the last writer: nothing checked in yet
    await core.release(first.fh)
    assert vault.calls["create_draft"] == 0
    await core.flush(second.fh)
    await core.release(second.fh)
    assert latest(vault, setup.doc_id) == b"CHANGEDl content\n"
    assert vault.calls["create_draft"] == 1 and vault.locks == {}
    # The draft keeps the document's file name, and the index knows it at once.
    assert core.tree.record(setup.doc_id)["filename__v"] == "guide.txt"
    assert core.tree.record(setup.doc_id)["minor_version_number__v"] == 4


async def test_a_read_write_open_goes_through_the_page_cache(setup: Setup) -> None:
    """What a program maps to edit (O_RDWR) is opened without direct_io, so that the
    kernel gives it a writable shared map; the other writers, and readers during the
    edit, stay direct; no read-only open after it keeps the pages it may have left."""
    core = setup.core
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    reader = await core.open(ino, os.O_RDONLY)
    assert not reader.direct_io  # the vault's content, through the page cache
    await core.release(reader.fh)
    mapped = await core.open(ino, os.O_RDWR)
    assert not mapped.direct_io and not mapped.keep_cache
    others = [await core.open(ino, flags) for flags in (os.O_WRONLY, os.O_RDWR | os.O_APPEND)]
    assert all(opened.direct_io for opened in others)
    await core.write(mapped.fh, 0, b"MAPPED")
    during = await core.open(ino, os.O_RDONLY)
    assert during.direct_io and await core.read(during.fh, 0, 6) == b"MAPPED"
    for opened in (during, *others, mapped):
        await core.release(opened.fh)
    assert latest(setup.vault, setup.doc_id) == b"MAPPED" + ORIGINAL[6:]
    # Read twice, the content's pages are kept; after a read-write open they are not,
    # also when it checked nothing in (the kernel's pages may hold what it wrote).
    for _ in range(2):
        kept = await core.open(ino, os.O_RDONLY)
        await core.read(kept.fh, 0, 6)
        await core.release(kept.fh)
    assert kept.keep_cache
    await core.release((await core.open(ino, os.O_RDWR)).fh)
    after = await core.open(ino, os.O_RDONLY)
    assert not after.keep_cache
    await core.release(after.fh)


async def test_a_shell_redirection_makes_one_draft(setup: Setup) -> None:
    """``echo x > file``: the shell flushes a duplicate descriptor before writing."""
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    opened = await core.open(ino, os.O_WRONLY | os.O_TRUNC)
    await core.flush(opened.fh)
    await core.write(opened.fh, 0, b"x\n")
    await core.flush(opened.fh)
    await core.release(opened.fh)
    assert vault.calls["create_draft"] == 1 and latest(vault, setup.doc_id) == b"x\n"


async def test_unchanged_content_uploads_nothing_and_unlocks(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    opened = await core.open(ino, os.O_RDWR)
    await core.write(opened.fh, 0, ORIGINAL[:4])
    await core.flush(opened.fh)
    await core.release(opened.fh)
    assert vault.calls["create_draft"] == 0 and vault.calls["unlock"] == 1 and vault.locks == {}


async def test_locked_by_another_user_is_ebusy_and_changes_nothing(setup: Setup) -> None:
    """The index says it is checked out: open() is EBUSY (one call asks who holds it)."""
    core, vault = setup.core, setup.vault
    vault.locks[setup.doc_id] = 99
    vault.docs[setup.doc_id][-1].record["locked__v"] = True
    await core.tree.index.refresh()
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    with pytest.raises(errors.LockedByOther) as info:
        await core.open(ino, os.O_WRONLY)
    assert errors.errno_for(info.value) == errno.EBUSY
    assert vault.locks == {setup.doc_id: 99} and setup.spool.pending() == []
    assert vault.calls["get_lock"] == 1 and vault.calls["lock"] == 0
    reader = await core.open(ino, os.O_RDONLY)
    assert await core.read(reader.fh, 0, 100) == ORIGINAL


async def test_a_lock_the_index_does_not_know_fails_the_first_write(setup: Setup) -> None:
    """Checked out by another user since the last poll: the open succeeds (no call),
    the first write is EBUSY, and nothing is changed or spooled."""
    core, vault = setup.core, setup.vault
    vault.locks[setup.doc_id] = 99
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    opened = await core.open(ino, os.O_WRONLY)
    with pytest.raises(errors.LockedByOther) as info:
        await core.write(opened.fh, 0, b"mine")
    assert errors.errno_for(info.value) == errno.EBUSY
    await core.flush(opened.fh)
    await core.release(opened.fh)
    assert vault.locks == {setup.doc_id: 99} and setup.spool.pending() == []
    assert vault.calls["create_draft"] == 0


async def test_truncate_without_an_open_file_is_one_save(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    await core.setattr(ino, 8, None)
    assert latest(vault, setup.doc_id) == ORIGINAL[:8] and vault.locks == {}


async def test_scratch_files_stay_local_and_rename_over_checks_in(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    doc = await walk(core, "Reference", "Guide")
    await write_file(core, doc, ".guide.txt.swp", b"swap")
    await write_file(core, doc, "sedAb12Cd", b"new content\n")
    assert {".guide.txt.swp", "sedAb12Cd", "guide.txt"} <= await names(core, doc)
    assert vault.calls["create_draft"] == 0 and vault.calls["create_document"] == 0
    swap = await core.lookup(doc, ".guide.txt.swp")
    assert swap.mode & 0o777 == 0o644 and swap.size == 4
    await core.rename(doc, "sedAb12Cd", doc, "guide.txt", 0)
    assert latest(vault, setup.doc_id) == b"new content\n" and vault.locks == {}
    assert "sedAb12Cd" not in await names(core, doc)
    await core.unlink(doc, ".guide.txt.swp")
    assert await names(core, doc) == {
        "guide.txt",
        "versions",
        "renditions",
        "attachments",
        "relationships",
    }
    scratch_dir = setup.spool.directory / "scratch"
    assert list(scratch_dir.iterdir()) == []


async def test_rename_mode_of_vim_backs_up_then_writes_anew(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    doc = await walk(core, "Reference", "Guide")
    await core.rename(doc, "guide.txt", doc, "guide.txt~", 0)
    assert "guide.txt" not in await names(core, doc)
    backup = await core.lookup(doc, "guide.txt~")
    opened = await core.open(backup.ino, os.O_RDONLY)
    assert await core.read(opened.fh, 0, 100) == ORIGINAL
    await core.release(opened.fh)
    opened, attr = await core.create(doc, "guide.txt", 0o644, os.O_WRONLY | os.O_CREAT)
    await core.write(opened.fh, 0, b"written anew\n")
    await core.flush(opened.fh)
    await core.release(opened.fh)
    await core.unlink(doc, "guide.txt~")
    assert latest(vault, setup.doc_id) == b"written anew\n" and vault.calls["create_draft"] == 1
    assert (await core.getattr(attr.ino)).size == len(b"written anew\n")
    assert "guide.txt~" not in await names(core, doc)


async def test_a_new_file_in_a_type_folder_creates_a_document(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    folder = await walk(core, "Reference")
    opened, attr = await core.create(folder, "Notes.md", 0o644, os.O_WRONLY | os.O_CREAT)
    await core.write(opened.fh, 0, b"# notes\n")
    assert "Notes.md" in await names(core, folder)  # pending meanwhile
    await core.flush(opened.fh)
    await core.release(opened.fh)
    [fields] = vault.created
    assert fields["name__v"] == "Notes" and fields["type__v"] == "reference__c"
    assert fields["lifecycle__v"] == "general_lifecycle__c" and fields["language__v"] == "English"
    assert "Notes" in await names(core, folder)  # known without a poll
    assert await names(core, await walk(core, "Reference", "Notes")) >= {"Notes.md"}
    assert (await core.getattr(attr.ino)).size == len(b"# notes\n")


def vault_away_for_creates(vault: FakeVault, answer: list[BaseException | None]) -> None:
    """Creates fail with what ``answer`` holds first (None: the vault takes them);
    every other call goes through."""
    real = vault.create_document

    async def create_document(
        fields: Mapping[str, str], file: Path | None, *, filename: str | None = None
    ) -> int:
        if answer and answer[0] is not None:
            vault.calls["create_document refused"] += 1
            raise answer[0]
        return await real(fields, file, filename=filename)

    vault.create_document = create_document  # type: ignore[method-assign]


async def test_a_create_the_vault_is_away_for_waits_in_the_queue_and_is_made_once(
    setup: Setup, autojump_clock: trio.testing.MockClock
) -> None:
    """The vault away longer than the close's tries: the create stays in the spool's
    queue (not lost+found) and is made once the vault is back, exactly once."""
    core, vault = setup.core, setup.vault
    folder = await walk(core, "Reference")
    answer: list[BaseException | None] = [errors.VaultUnavailable("connection refused")]
    vault_away_for_creates(vault, answer)
    await write_file(core, folder, "Trip.md", b"# trip\n")  # the close's 8 tries fail
    assert vault.calls["create_document refused"] == 8 and vault.created == []
    [waiting] = setup.spool.pending()
    shown = (waiting["doc_id"], waiting["filename"], waiting["state"])
    assert shown == (None, "Trip.md", "creating")
    assert waiting["last_error"].startswith("VAULT_UNAVAILABLE")
    assert setup.spool.lost_and_found() == []
    await trio.sleep(3600)  # an hour away: retried with the queue's backoff, kept
    assert vault.created == [] and len(setup.spool.pending()) == 1
    answer[0] = None  # the vault is back
    await setup.spool.flush_now()
    assert await setup.spool.wait_idle(600)
    [fields] = vault.created
    assert fields["name__v"] == "Trip" and fields["external_id__v"].startswith("vaultfs-")
    assert "Trip" in await names(core, folder)  # shown without a poll
    assert setup.spool.pending() == [] and setup.spool.lost_and_found() == []
    assert not list((setup.spool.directory / "creates").iterdir())  # settled on disk


async def test_a_queued_create_the_vault_then_refuses_goes_to_lost_and_found(
    setup: Setup, autojump_clock: trio.testing.MockClock
) -> None:
    core, vault = setup.core, setup.vault
    folder = await walk(core, "Reference")
    answer: list[BaseException | None] = [errors.VaultUnavailable("connection refused")]
    vault_away_for_creates(vault, answer)
    await write_file(core, folder, "Refused.md", b"kept\n")
    assert len(setup.spool.pending()) == 1
    answer[0] = errors.InsufficientAccess("no longer yours to create")
    await setup.spool.flush_now()
    assert await setup.spool.wait_idle(600)
    [kept] = setup.spool.lost_and_found()
    assert kept.read_bytes() == b"kept\n"
    assert vault.created == [] and setup.spool.pending() == []


async def test_mkdir_then_a_file_names_the_document_after_the_directory(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    folder = await walk(core, "Reference")
    new = await core.mkdir(folder, "Plan B")
    await write_file(core, new.ino, ".plan.pdf.tmp", b"scratch")
    await write_file(core, new.ino, "plan.pdf", b"%PDF plan")
    [fields] = vault.created
    assert fields["name__v"] == "Plan B"
    doc_id = max(vault.docs)
    assert vault.docs[doc_id][-1].record["filename__v"] == "plan.pdf"
    assert await names(core, new.ino) >= {"plan.pdf", ".plan.pdf.tmp", "versions"}


async def test_a_required_field_without_default_waits_for_setfattr(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    core, vault = setup.core, setup.vault
    vault.required["reference__c"] = ["study_number__c", "site__c"]
    folder = await walk(core, "Reference")
    before = set(vault.docs)
    opened, attr = await core.create(folder, "Study.txt", 0o644, os.O_WRONLY | os.O_CREAT)
    # Before the first close: a field on the open new file.
    await core.setxattr(attr.ino, "user.vault.site__c", b"Berlin")
    await core.write(opened.fh, 0, b"precious")
    await core.flush(opened.fh)  # no error: the file waits for its fields
    await core.release(opened.fh)
    assert "study_number__c" in caplog.text
    assert set(vault.docs) == before and vault.calls["create_document"] == 0
    assert "Study.txt" in await names(core, folder)
    ino = await walk(core, "Reference", "Study.txt")
    assert json.loads(await core.getxattr(ino, "user.vault.missing_fields")) == ["study_number__c"]
    [pending] = core.status()["pending_new_documents"]
    assert pending["file"] == "Study.txt" and pending["missing"] == ["study_number__c"]
    assert core.status()["lost_and_found"] == []
    # After it: the last field creates the document at once, with every field given.
    await core.setxattr(ino, "user.vault.study_number__c", b"S-1")
    [doc_id] = set(vault.docs) - before
    assert latest(vault, doc_id) == b"precious"
    assert vault.created[-1]["study_number__c"] == "S-1"
    assert vault.created[-1]["site__c"] == "Berlin"
    assert core.status()["pending_new_documents"] == []


async def test_folder_defaults_for_new_files(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    vault.required["reference__c"] = ["study_number__c"]
    folder = await walk(core, "Reference")
    await core.setxattr(folder, "user.vault.default.study_number__c", b"S-9")
    assert await core.getxattr(folder, "user.vault.default.study_number__c") == b"S-9"
    await write_file(core, folder, "Dosing.txt", b"table")
    assert vault.created[-1]["study_number__c"] == "S-9"
    assert core.status()["pending_new_documents"] == []


async def test_fields_change_through_xattrs(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    await core.setxattr(ino, "user.vault.title__v", b"A title")
    assert vault.docs[setup.doc_id][-1].record["title__v"] == "A title"
    assert await core.getxattr(ino, "user.vault.title__v") == b"A title"
    calls = sum(vault.calls.values())
    await core.setxattr(ino, "user.vault.title__v", b"A title")  # same value: no call
    assert sum(vault.calls.values()) == calls
    await core.setxattr(ino, "user.vault.language__v", b'["English","French"]')
    assert vault.docs[setup.doc_id][-1].record["language__v"] == ["English", "French"]
    await core.setxattr(ino, "user.vault.title__v", None)
    assert await core.getxattr(ino, "user.vault.title__v") == b""
    with pytest.raises(errors.NotEditable):
        await core.setxattr(ino, "user.vault.md5checksum__v", b"0")
    for name in ("user.vault.no_such_field__c", "user.other"):
        with pytest.raises((errors.VaultError, OSError)) as info:
            await core.setxattr(ino, name, b"x")
        assert errors.errno_for(info.value) == errno.ENOTSUP
    old = await walk(core, "Reference", "Guide", "versions", "0.1", "guide.txt")
    await core.setxattr(old, "user.vault.title__v", b"old title")
    assert vault.docs[setup.doc_id][0].record["title__v"] == "old title"
    assert await core.getxattr(old, "user.vault.title__v") == b"old title"


def vault_away_for_fields(vault: FakeVault, answer: list[BaseException | None]) -> None:
    """PUTs of fields fail with what ``answer`` holds first (None: the vault takes them)."""
    real = vault.update_document

    async def update_document(doc_id: int, fields: Mapping[str, str | None]) -> None:
        if answer[0] is not None:
            vault.calls["update_document refused"] += 1
            raise answer[0]
        await real(doc_id, fields)

    vault.update_document = update_document  # type: ignore[method-assign]


async def test_a_field_set_the_vault_is_away_for_waits_and_getfattr_shows_it(
    setup: Setup, autojump_clock: trio.testing.MockClock
) -> None:
    """setfattr while the vault is away returns once the value is safe in the spool;
    getfattr shows it; a second set replaces it; the vault gets the last value once."""
    core, vault, spool = setup.core, setup.vault, setup.spool
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    answer: list[BaseException | None] = [errors.VaultUnavailable("connection refused")]
    vault_away_for_fields(vault, answer)
    await core.setxattr(ino, "user.vault.title__v", b"First")
    await core.setxattr(ino, "user.vault.title__v", b"Second")  # replaces the value waiting
    assert vault.calls["update_document"] == 0 and vault.calls["update_document refused"] == 2
    assert await core.getxattr(ino, "user.vault.title__v") == b"Second"
    assert await core.getxattr(await walk(core, "Reference", "Guide"), "user.vault.title__v") == (
        b"Second"
    )
    [waiting] = spool.pending()
    assert (waiting["doc_id"], waiting["filename"]) == (setup.doc_id, "user.vault.title__v")
    assert waiting["last_error"].startswith("VAULT_UNAVAILABLE")
    assert len(list((spool.directory / "fields").glob("*.json"))) == 1
    await trio.sleep(3600)  # an hour away: kept, retried
    assert vault.calls["update_document"] == 0 and len(spool.pending()) == 1
    answer[0] = None  # the vault is back
    await spool.flush_now()
    assert await spool.wait_idle(600)
    assert vault.calls["update_document"] == 1  # one PUT, of the last value
    assert vault.docs[setup.doc_id][-1].record["title__v"] == "Second"
    assert await core.getxattr(ino, "user.vault.title__v") == b"Second"
    assert spool.pending() == [] and spool.lost_and_found() == []
    assert not list((spool.directory / "fields").glob("*.json"))


async def test_a_field_set_the_vault_refuses_fails_at_once_and_keeps_nothing(
    setup: Setup,
) -> None:
    core, vault, spool = setup.core, setup.vault, setup.spool
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    vault_away_for_fields(vault, [errors.InvalidData("not a title")])
    with pytest.raises(errors.InvalidData):
        await core.setxattr(ino, "user.vault.title__v", b"Bad")
    assert spool.pending() == [] and spool.lost_and_found() == []
    with pytest.raises(errors.NoSuchAttribute):  # never set: nothing shown
        await core.getxattr(ino, "user.vault.title__v")


async def test_a_refused_set_keeps_the_value_that_waited_before_it(
    setup: Setup, autojump_clock: trio.testing.MockClock
) -> None:
    """A value accepted while the vault was away stays accepted when a later set of the
    same field is refused: the refusal is that set's alone."""
    core, vault, spool = setup.core, setup.vault, setup.spool
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    answer: list[BaseException | None] = [errors.VaultUnavailable("connection refused")]
    vault_away_for_fields(vault, answer)
    await core.setxattr(ino, "user.vault.title__v", b"Accepted")
    answer[0] = errors.InvalidData("not a title")
    with pytest.raises(errors.InvalidData):
        await core.setxattr(ino, "user.vault.title__v", b"Refused")
    assert await core.getxattr(ino, "user.vault.title__v") == b"Accepted"
    [waiting] = spool.pending()
    assert waiting["filename"] == "user.vault.title__v"
    answer[0] = None
    await spool.flush_now()
    assert await spool.wait_idle(600)
    assert vault.docs[setup.doc_id][-1].record["title__v"] == "Accepted"
    assert spool.pending() == [] and spool.lost_and_found() == []


async def test_a_waiting_field_set_the_vault_then_refuses_is_kept_in_lost_and_found(
    setup: Setup, autojump_clock: trio.testing.MockClock
) -> None:
    core, vault, spool = setup.core, setup.vault, setup.spool
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    answer: list[BaseException | None] = [errors.VaultUnavailable("connection refused")]
    vault_away_for_fields(vault, answer)
    await core.setxattr(ino, "user.vault.title__v", b"Kept")
    answer[0] = errors.InsufficientAccess("no longer yours")
    await spool.flush_now()
    assert await spool.wait_idle(600)
    [kept] = spool.lost_and_found()
    assert kept.read_bytes() == b"Kept" and kept.name.endswith("title__v.txt")
    [why] = spool.lost_records()
    assert why["error"].startswith("INSUFFICIENT_ACCESS") and why["doc_id"] == setup.doc_id
    assert why["filename"] == "user.vault.title__v"
    assert spool.pending() == []
    with pytest.raises(errors.NoSuchAttribute):  # the vault's, not the value refused
        await core.getxattr(ino, "user.vault.title__v")


async def test_a_field_set_left_by_a_daemon_is_sent_by_the_next_start(
    tmp_path: Path,
) -> None:
    """The record of a set the vault was away for, found at a start, is sent at once."""
    async for first in _setup(tmp_path):
        ino = await walk(first.core, "Reference", "Guide", "guide.txt")
        vault_away_for_fields(first.vault, [errors.VaultUnavailable("connection refused")])
        await first.core.setxattr(ino, "user.vault.title__v", b"After the restart")
    async for second in _setup(tmp_path):
        assert await second.spool.wait_idle(60)
        assert second.vault.calls["update_document"] == 1
        assert second.vault.docs[second.doc_id][-1].record["title__v"] == "After the restart"
        assert second.spool.pending() == []


async def test_deleting_is_off_by_default(setup: Setup) -> None:
    core = setup.core
    doc = await walk(core, "Reference", "Guide")
    version = await walk(core, "Reference", "Guide", "versions", "0.1")
    for parent, name in ((version, "guide.txt"), (doc, "guide.txt")):
        with pytest.raises(errors.OperationNotPermitted):
            await core.unlink(parent, name)
    with pytest.raises(errors.OperationNotPermitted):
        await core.rmdir(await walk(core, "Reference"), "Guide")
    assert len(setup.vault.docs[setup.doc_id]) == 3


async def test_rm_of_a_version_and_rm_r_of_a_document(deleting: Setup) -> None:
    core, vault = deleting.core, deleting.vault
    version = await walk(core, "Reference", "Guide", "versions", "0.2")
    await core.unlink(version, "guide.txt")
    assert [v.record["minor_version_number__v"] for v in vault.docs[deleting.doc_id]] == [1, 3]
    # rm -r: the walk removes everything inside, then the directory.
    folder = await walk(core, "Reference")
    await rm_r(core, folder, "Guide")
    assert deleting.doc_id not in vault.docs
    assert "Reference" not in await names(core, ROOT_INODE)  # its only document is gone
    assert vault.calls["delete_document"] == 1


async def rm_r(core: FileSystem, parent: int, name: str) -> None:
    """What ``rm -r`` does: read a directory, remove its entries in that order, rmdir."""
    attr = await core.lookup(parent, name)
    if attr.mode & 0o040000:
        fh = await core.opendir(attr.ino)
        listing = [entry_name for _, entry_name, _, _ in await core.readdir(fh, 0)]
        core.releasedir(fh)
        for child in listing:
            await rm_r(core, attr.ino, child)
        await core.rmdir(parent, name)
    else:
        await core.unlink(parent, name)


async def test_checkin_failure_keeps_the_content_pending(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    opened = await core.open(ino, os.O_WRONLY | os.O_TRUNC)
    await core.write(opened.fh, 0, b"offline work")
    vault.unreachable = True
    await core.flush(opened.fh)  # close(): durable in the spool, nothing sent yet
    assert vault.calls["create_draft"] == 0
    await core.release(opened.fh)  # the check-in: fails, and is kept
    [pending] = core.status()["pending_uploads"]
    assert pending["doc_id"] == setup.doc_id and pending["state"] in ("pending", "uploading")
    assert "VAULT_UNAVAILABLE" in pending["last_error"]
    data = (setup.spool.directory / f"{setup.doc_id}.data").read_bytes()
    assert hashlib.md5(data).hexdigest() == hashlib.md5(b"offline work").hexdigest()
    vault.unreachable = False
    await setup.spool.flush_now()
    assert latest(vault, setup.doc_id) == b"offline work" and vault.locks == {}


# --- the open/write/flush/release state machine under interleavings ----------------


def slowed(vault: FakeVault, name: str, seconds: float) -> None:
    """Make one API call of the fake take ``seconds`` (of trio's virtual clock)."""
    call = getattr(vault, name)

    async def slow(*args: object, **kwargs: object) -> object:
        await trio.sleep(seconds)
        return await call(*args, **kwargs)

    setattr(vault, name, slow)


@pytest.mark.parametrize("slow_call", ["unlock", "lock", "get_document"])
async def test_open_close_pairs_without_a_write_never_make_a_version(
    setup: Setup, autojump_clock: trio.testing.MockClock, slow_call: str
) -> None:
    """LibreOffice after its save: open(O_RDWR), close, open(O_RDWR) again at once, while
    the first close's check-in is still under way."""
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    versions = len(vault.docs[setup.doc_id])
    slowed(vault, slow_call, 1.0)
    first = await core.open(ino, os.O_RDWR)
    await core.flush(first.fh)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(core.release, first.fh)  # the kernel sends release later
        for delay in (0.0, 0.5, 1.5):
            await trio.sleep(delay)
            again = await core.open(ino, os.O_RDWR)
            await core.flush(again.fh)
            nursery.start_soon(core.release, again.fh)
    assert len(vault.docs[setup.doc_id]) == versions
    assert latest(vault, setup.doc_id) == ORIGINAL
    assert vault.calls["create_draft"] == 0 and vault.locks == {}


async def test_an_open_during_a_check_in_edits_the_checked_in_content(
    setup: Setup, autojump_clock: trio.testing.MockClock
) -> None:
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    slowed(vault, "create_draft", 1.0)
    first = await core.open(ino, os.O_WRONLY | os.O_TRUNC)
    await core.write(first.fh, 0, b"one\n")
    await core.flush(first.fh)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(core.release, first.fh)  # the check-in
        await trio.sleep(0.5)  # mid-upload
        second = await core.open(ino, os.O_WRONLY | os.O_APPEND)
        await core.write(second.fh, 0, b"two\n")
        await core.flush(second.fh)
        await core.release(second.fh)
    assert latest(vault, setup.doc_id) == b"one\ntwo\n"
    assert vault.calls["create_draft"] == 2 and vault.locks == {}


async def test_append_lands_at_the_true_end_whatever_offset_the_kernel_sends(
    setup: Setup,
) -> None:
    """The kernel computes an O_APPEND offset from the size it believes: the listing's
    KB estimate (1024 for this 17-byte file) until something read the file."""
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    assert (await core.getattr(ino)).size == 1024  # the estimate
    opened = await core.open(ino, os.O_WRONLY | os.O_APPEND)  # no call yet
    await core.write(opened.fh, 1024, b"gamma line\n")
    assert (await core.getattr(ino)).size == len(ORIGINAL) + 11  # exact once checked out
    await core.write(opened.fh, 1035, b"delta line\n")
    await core.flush(opened.fh)
    await core.release(opened.fh)
    assert latest(vault, setup.doc_id) == ORIGINAL + b"gamma line\ndelta line\n"


async def test_an_edit_starts_from_the_latest_version_read_after_the_lock(setup: Setup) -> None:
    """Another client saved since this mount's index was read: an append builds on that
    save, never on the older content the index still names."""
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    vault.new_version(setup.doc_id, b"saved elsewhere\n")  # the index does not know yet
    opened = await core.open(ino, os.O_WRONLY | os.O_APPEND)
    await core.write(opened.fh, 0, b"mine\n")
    await core.flush(opened.fh)
    await core.release(opened.fh)
    assert latest(vault, setup.doc_id) == b"saved elsewhere\nmine\n"


async def test_a_failed_write_never_becomes_a_version(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    versions = len(vault.docs[setup.doc_id])
    opened = await core.open(ino, os.O_WRONLY | os.O_TRUNC)
    await core.write(opened.fh, 0, b"first part ")
    real_pwrite = os.pwrite

    def full_disk(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full_disk)
    with pytest.raises(OSError) as failed:
        await core.write(opened.fh, 11, b"never written")
    assert failed.value.errno == errno.ENOSPC
    monkeypatch.setattr(os, "pwrite", real_pwrite)  # space is back
    with pytest.raises(OSError) as closing:
        await core.flush(opened.fh)
    assert closing.value.errno == errno.EIO
    await core.release(opened.fh)
    await setup.spool.flush_now()
    assert len(vault.docs[setup.doc_id]) == versions and vault.locks == {}
    [lost] = core.status()["lost_and_found"]
    assert lost["error"].startswith("WRITE_FAILED") and lost["size"] == 11
    assert core.status()["pending_uploads"] == []


async def test_a_check_in_by_the_retry_worker_shows_in_the_tree_at_once(setup: Setup) -> None:
    core, vault = setup.core, setup.vault
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    opened = await core.open(ino, os.O_WRONLY | os.O_TRUNC)
    await core.write(opened.fh, 0, b"retried\n")
    vault.unreachable = True
    await core.flush(opened.fh)
    await core.release(opened.fh)  # the check-in fails: pending
    vault.unreachable = False
    await setup.spool.flush_now()  # what the worker does once the backoff is over
    assert core.status()["pending_uploads"] == []
    assert latest(vault, setup.doc_id) == b"retried\n"
    record = core.tree.record(setup.doc_id)
    assert record["md5checksum__v"] == hashlib.md5(b"retried\n").hexdigest()
