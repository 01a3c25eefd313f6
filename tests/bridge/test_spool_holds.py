"""Unit tests of the spool's check-outs for editors' lock files (``Spool.hold``,
``let_go``) and of the lock files' names and lines, over the in-memory fake vault of
``test_spool_unit``."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from vaultfs.bridge.write.editor_locks import lock_file_name, lock_line, locks_source
from vaultfs.bridge.write.spool import lock_marks
from vaultfs.errors import LockedByOther

from .test_spool_unit import (
    DOC,
    ME,
    ORIGINAL,
    OTHER,
    FakeVault,
    check_out,
    make_spool,
    running,
    spool_files,
)


@pytest.fixture
def vault() -> FakeVault:
    return FakeVault()


@pytest.fixture
def original(tmp_path: Path) -> Path:
    path = tmp_path / "original.txt"
    path.write_bytes(ORIGINAL)
    return path


async def test_a_hold_locks_with_its_mark_and_letting_go_undoes_it(
    vault: FakeVault, tmp_path: Path
) -> None:
    spool = make_spool(tmp_path / "spool", vault)
    await spool.hold(DOC)
    assert vault.locks == {DOC: ME} and spool.holding(DOC)
    assert spool_files(tmp_path / "spool") == [f"locks/{DOC}"]
    await spool.let_go(DOC)
    assert vault.locks == {} and not spool.holding(DOC)
    assert spool_files(tmp_path / "spool") == []
    assert vault.drafts == []


async def test_a_hold_on_a_document_another_user_holds_is_refused(
    vault: FakeVault, tmp_path: Path
) -> None:
    vault.locks[DOC] = OTHER
    spool = make_spool(tmp_path / "spool", vault)
    with pytest.raises(LockedByOther):
        await spool.hold(DOC)
    assert not spool.holding(DOC)
    assert spool_files(tmp_path / "spool") == []
    assert vault.locks == {DOC: OTHER}


async def test_a_save_while_held_keeps_the_lock_and_letting_go_releases_it(
    vault: FakeVault, tmp_path: Path, original: Path
) -> None:
    spool = make_spool(tmp_path / "spool", vault)
    await spool.hold(DOC)
    locks_asked = vault.calls["lock"]
    entry = await check_out(spool, original)
    assert vault.calls["lock"] == locks_asked  # held already: not asked again
    entry.pwrite(len(ORIGINAL), b"more\n")
    await spool.commit(entry)
    assert vault.drafts == [(DOC, ORIGINAL + b"more\n")]
    assert vault.locks == {DOC: ME}  # still checked out for the editor
    assert spool.entry(DOC) is None
    await spool.let_go(DOC)
    assert vault.locks == {}
    assert spool_files(tmp_path / "spool") == []


async def test_letting_go_during_a_save_leaves_the_unlock_to_its_check_in(
    vault: FakeVault, tmp_path: Path, original: Path
) -> None:
    spool = make_spool(tmp_path / "spool", vault)
    await spool.hold(DOC)
    entry = await check_out(spool, original)
    await spool.let_go(DOC)
    assert vault.locks == {DOC: ME}  # the open save holds it
    entry.pwrite(0, b"X")
    await spool.commit(entry)
    assert vault.locks == {}
    assert len(vault.drafts) == 1


async def test_two_lock_files_hold_one_check_out(vault: FakeVault, tmp_path: Path) -> None:
    spool = make_spool(tmp_path / "spool", vault)
    await spool.hold(DOC)
    await spool.hold(DOC)
    assert vault.calls["lock"] == 1
    await spool.let_go(DOC)
    assert vault.locks == {DOC: ME}
    await spool.let_go(DOC)
    assert vault.locks == {}


class SlowUnlock(FakeVault):
    """A vault whose unlock waits until ``go`` is set (``unlocking`` says it began,
    ``unlocked`` that it is done)."""

    def __init__(self) -> None:
        super().__init__()
        self.unlocking, self.go, self.unlocked = trio.Event(), trio.Event(), trio.Event()

    async def unlock(self, doc_id: int) -> None:
        self.unlocking.set()
        await self.go.wait()
        await super().unlock(doc_id)
        self.unlocked.set()


async def test_a_hold_asked_while_a_left_lock_is_released_locks_afresh(tmp_path: Path) -> None:
    """A daemon starts and releases the lock an earlier one left (a killed WebDAV front
    whose LOCK was held); a check-out asked meanwhile waits, then takes a lock of its
    own, not the one about to be released."""
    vault = SlowUnlock()
    vault.locks[DOC] = ME  # left by the earlier daemon
    spool = make_spool(tmp_path / "spool", vault)
    lock_marks.mark(tmp_path / "spool", DOC)
    async with running(spool), trio.open_nursery() as nursery:
        await vault.unlocking.wait()  # the release is under way
        nursery.start_soon(spool.hold, DOC)
        await trio.testing.wait_all_tasks_blocked()
        vault.go.set()
        await vault.unlocked.wait()
        await trio.testing.wait_all_tasks_blocked()  # the release's end, the hold's
    assert spool.holding(DOC)
    assert vault.locks == {DOC: ME}  # held, in the vault too
    assert spool_files(tmp_path / "spool") == [f"locks/{DOC}"]
    await spool.let_go(DOC)
    assert vault.locks == {}


def test_lock_file_names() -> None:
    assert lock_file_name("report.docx") == ".~lock.report.docx#"
    assert locks_source(".~lock.report.docx#", "report.docx")
    assert locks_source("~$port.docx", "report.docx")  # Office, long names
    assert locks_source("~$ab.docx", "ab.docx")  # Office, short names
    assert not locks_source(".~lock.other.docx#", "report.docx")
    assert not locks_source("report.docx~", "report.docx")
    assert not locks_source("~$", "ab")
    assert not locks_source(".~lock.x#", None)


def test_lock_lines_are_libreoffice_s_format() -> None:
    user = {"user_name__v": "ann@example.com", "user_first_name__v": "Ann, Jr."}
    line = lock_line(user, 7, "2026-11-27T09:41:00Z").decode()
    assert line.startswith("Ann\\, Jr.,ann@example.com,vault,")
    assert line.endswith(",vaultfs;")
    # five fields once the escaped comma is read as LibreOffice reads it
    assert len(line.replace("\\,", "").rstrip(";").split(",")) == 5
    assert lock_line(None, 7, None).decode().startswith("user 7,user 7,vault,")
