"""Unit tests of the check-out as a lease (``write.lease``): its one transition table,
the reasons that hold it (a save, an editor's lock file, a WebDAV lock), the fence
across one user's clients, the release of what an earlier daemon left; and of the
editors' lock files' names and lines. Over the in-memory fake vault of
``test_spool_unit``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from vaultfs.bridge.write.editor_locks import lock_file_name, lock_line, locks_source
from vaultfs.bridge.write.lease import LEASE_MOVES, Lease, LeaseState, Reason
from vaultfs.bridge.write.spool.interface import start_from
from vaultfs.bridge.write.spool.spool import Spool
from vaultfs.bridge.write.spool.states import IllegalTransition
from vaultfs.client import Reach
from vaultfs.errors import CheckInConflict, LockedByOther, VaultOffline, VaultUnavailable

from .test_spool_unit import (
    DOC,
    ME,
    ORIGINAL,
    OTHER,
    FakeVault,
    check_out,
    make_spool,
    md5,
    running,
    spool_files,
)


async def hold(spool: Spool) -> None:
    """An editor's lock file takes the document's lease."""
    await spool.leases.take(DOC, Reason.EDITOR)


async def let_go(spool: Spool) -> None:
    await spool.leases.drop(DOC, Reason.EDITOR)


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
    await hold(spool)
    assert vault.locks == {DOC: ME} and spool.leases.holding(DOC, Reason.EDITOR)
    assert spool_files(tmp_path / "spool") == [f"locks/{DOC}"]
    await let_go(spool)
    assert vault.locks == {} and not spool.leases.holding(DOC, Reason.EDITOR)
    assert spool_files(tmp_path / "spool") == []
    assert vault.drafts == []


async def test_a_hold_on_a_document_another_user_holds_is_refused(
    vault: FakeVault, tmp_path: Path
) -> None:
    vault.locks[DOC] = OTHER
    spool = make_spool(tmp_path / "spool", vault)
    with pytest.raises(LockedByOther):
        await hold(spool)
    assert not spool.leases.holding(DOC, Reason.EDITOR)
    assert spool_files(tmp_path / "spool") == []
    assert vault.locks == {DOC: OTHER}


async def test_a_save_while_held_keeps_the_lock_and_letting_go_releases_it(
    vault: FakeVault, tmp_path: Path, original: Path
) -> None:
    spool = make_spool(tmp_path / "spool", vault)
    await hold(spool)
    locks_asked = vault.calls["lock"]
    entry = await check_out(spool, original)
    assert vault.calls["lock"] == locks_asked  # held already: not asked again
    entry.pwrite(len(ORIGINAL), b"more\n")
    await spool.commit(entry)
    assert vault.drafts == [(DOC, ORIGINAL + b"more\n")]
    assert vault.locks == {DOC: ME}  # still checked out for the editor
    assert spool.entry(DOC) is None
    await let_go(spool)
    assert vault.locks == {}
    assert spool_files(tmp_path / "spool") == []


async def test_letting_go_during_a_save_leaves_the_unlock_to_its_check_in(
    vault: FakeVault, tmp_path: Path, original: Path
) -> None:
    spool = make_spool(tmp_path / "spool", vault)
    await hold(spool)
    entry = await check_out(spool, original)
    await let_go(spool)
    assert vault.locks == {DOC: ME}  # the open save holds it
    entry.pwrite(0, b"X")
    await spool.commit(entry)
    assert vault.locks == {}
    assert len(vault.drafts) == 1


async def test_two_lock_files_hold_one_check_out(vault: FakeVault, tmp_path: Path) -> None:
    spool = make_spool(tmp_path / "spool", vault)
    await hold(spool)
    await hold(spool)
    assert vault.calls["lock"] == 1
    await let_go(spool)
    assert vault.locks == {DOC: ME}
    await let_go(spool)
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
    (tmp_path / "spool" / "locks").mkdir()
    (tmp_path / "spool" / "locks" / str(DOC)).write_text("")  # a mark without its date
    async with running(spool), trio.open_nursery() as nursery:
        await vault.unlocking.wait()  # the release is under way
        nursery.start_soon(hold, spool)
        await trio.testing.wait_all_tasks_blocked()
        vault.go.set()
        await vault.unlocked.wait()
        await trio.testing.wait_all_tasks_blocked()  # the release's end, the hold's
    assert spool.leases.holding(DOC, Reason.EDITOR)
    assert vault.locks == {DOC: ME}  # held, in the vault too
    assert spool_files(tmp_path / "spool") == [f"locks/{DOC}"]
    await let_go(spool)
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


# --- the lease's table and its fence ------------------------------------------


def test_every_pair_of_lease_states_is_allowed_or_refused_as_the_table_says() -> None:
    for old in LeaseState:
        for new in LeaseState:
            lease = Lease(DOC, old)
            if LEASE_MOVES.allows(old, new):
                lease.move(new)
                assert lease.state == new
            else:
                with pytest.raises(IllegalTransition):
                    lease.move(new)
                assert lease.state == old


async def test_a_lock_of_this_user_taken_by_another_client_is_refused(
    vault: FakeVault, tmp_path: Path
) -> None:
    """The vault lets this user lock it again; the lease refuses (another client's)."""
    vault.locks[DOC] = ME
    spool = make_spool(tmp_path / "spool", vault)
    with pytest.raises(LockedByOther, match="another client"):
        await hold(spool)
    assert not spool.leases.held_here(DOC)
    assert vault.locks == {DOC: ME} and vault.calls["unlock"] == 0
    assert spool_files(tmp_path / "spool") == []


async def test_the_lease_keeps_the_locks_date_in_its_mark(vault: FakeVault, tmp_path: Path) -> None:
    spool = make_spool(tmp_path / "spool", vault)
    await hold(spool)
    assert spool.leases.state(DOC) == LeaseState.HELD
    assert await spool.leases.verify(DOC) is None  # its first look learns the date
    mark = (tmp_path / "spool" / "locks" / str(DOC)).read_text()
    assert vault.lock_dates[DOC] in mark
    vault.lock_dates[DOC] = "2025-01-02T00:00:00.000Z"  # undone, and taken again
    assert "another client" in str(await spool.leases.verify(DOC))


async def test_a_check_in_whose_lease_was_taken_over_by_another_client_is_a_conflict(
    vault: FakeVault, tmp_path: Path, original: Path
) -> None:
    """This user's other client undid the check-out and took its own (another date):
    the check-in replaces nothing and keeps the content in lost+found."""
    spool = make_spool(tmp_path / "spool", vault)
    await hold(spool)
    assert await spool.leases.verify(DOC) is None  # a save under the hold: its date
    entry = await check_out(spool, original)
    entry.pwrite(len(ORIGINAL), b"mine\n")
    vault.lock_dates[DOC] = "2025-01-02T00:00:00.000Z"  # unlocked and locked again
    with pytest.raises(CheckInConflict, match="another client"):
        await spool.commit(entry)
    assert vault.drafts == []
    assert vault.locks == {DOC: ME}  # the other client's lock is left alone
    assert not spool.leases.held_here(DOC)
    [lost] = spool.lost_records()
    assert "CHECK_IN_CONFLICT" in str(lost)


async def test_a_left_lock_that_is_another_clients_now_is_not_released(
    vault: FakeVault, tmp_path: Path
) -> None:
    """An earlier daemon's mark names a lock date; the vault's lock of this user has
    another: another client took it since. Its mark goes, the lock stays."""
    vault.locks[DOC] = ME
    vault.lock_dates[DOC] = "2025-01-03T00:00:00.000Z"
    spool = make_spool(tmp_path / "spool", vault)
    (tmp_path / "spool" / "locks").mkdir()
    (tmp_path / "spool" / "locks" / str(DOC)).write_text(
        '{"locked_date": "2025-01-01T00:00:00.000Z"}'
    )
    async with running(spool):
        await trio.testing.wait_all_tasks_blocked()
    assert vault.locks == {DOC: ME} and vault.calls["unlock"] == 0
    assert spool_files(tmp_path / "spool") == []


async def test_a_webdav_lock_and_an_editors_file_hold_one_lease(
    vault: FakeVault, tmp_path: Path
) -> None:
    spool = make_spool(tmp_path / "spool", vault)
    await spool.leases.take(DOC, Reason.WEBDAV)
    await hold(spool)
    assert vault.calls["lock"] == 1
    assert await spool.leases.drop(DOC, Reason.WEBDAV) is False
    assert vault.locks == {DOC: ME}
    assert await spool.leases.drop(DOC, Reason.EDITOR) is True
    assert vault.locks == {} and not spool.leases.held_here(DOC)


class Overtaken(FakeVault):
    """A vault with version numbers, where another client of this user checks a version
    in while this client's draft is on its way (both held the lock the vault let them
    take): this draft lands after it."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: list[bytes] = [ORIGINAL]  # 0.1, 0.2, ...

    async def get_document(self, doc_id: int) -> dict[str, Any]:
        body = await super().get_document(doc_id)
        body["document"].update(
            major_version_number__v=0, minor_version_number__v=len(self.versions)
        )
        return body

    async def create_draft(
        self, doc_id: int, file: Path | None, *, filename: str | None = None
    ) -> tuple[int, int]:
        if len(self.versions) == 1:
            self.versions.append(b"the other client's save\n")
        await super().create_draft(doc_id, file, filename=filename)
        self.versions.append(self.content[doc_id])
        self.content[doc_id] = self.versions[-1]
        return 0, len(self.versions)

    @asynccontextmanager
    async def download_file(
        self, doc_id: int, major: int | None = None, minor: int | None = None
    ) -> AsyncIterator[Any]:
        await self._call("download_file")
        data = self.versions[(minor or len(self.versions)) - 1]

        class Chunks:
            async def pieces(self) -> AsyncIterator[bytes]:
                yield data

        yield Chunks()


async def test_a_draft_that_overtook_another_clients_save_gives_it_back(
    tmp_path: Path, original: Path
) -> None:
    """The lease's last window: two clients of one user locked within one round trip,
    and the other checked in between this one's verification and its draft. The other's
    save is made the latest again; this one goes to lost+found as a conflict."""
    vault = Overtaken()
    spool = make_spool(tmp_path / "spool", vault)
    entry = await spool.begin(
        DOC,
        start_from(original, filename="report.txt", base_md5=md5(ORIGINAL), base_version="0.1"),
    )
    entry.pwrite(len(ORIGINAL), b"mine\n")
    with pytest.raises(CheckInConflict, match="another client"):
        await spool.commit(entry)
    assert vault.versions[-1] == b"the other client's save\n"  # the latest again
    assert vault.versions[2] == ORIGINAL + b"mine\n"  # 0.3, from the old base
    [lost] = spool.lost_records()
    assert "0.2" in str(lost) and "latest again" in str(lost)


# --- offline: a check-out owed ---------------------------------------------------


async def test_a_save_offline_is_owed_and_its_check_in_takes_the_lock_first(
    vault: FakeVault, tmp_path: Path, original: Path
) -> None:
    vault.reach.move(Reach.OFFLINE, "no network")
    spool = make_spool(tmp_path / "spool", vault)
    entry = await check_out(spool, original)
    assert spool.leases.state(DOC) == LeaseState.OWED and spool.leases.held_here(DOC)
    assert vault.calls["lock"] == 0 and vault.locks == {}
    assert '"owed"' in (tmp_path / "spool" / "locks" / str(DOC)).read_text()
    entry.pwrite(len(ORIGINAL), b"on the train\n")
    with pytest.raises(VaultOffline):  # close() is told; the spool keeps it
        await spool.commit(entry)
    assert spool.entry(DOC) is not None and vault.drafts == []
    vault.reach.move(Reach.ONLINE)
    await spool.flush_now()  # what the queue does once the vault is back
    assert vault.calls["lock"] == 1
    assert vault.drafts == [(DOC, ORIGINAL + b"on the train\n")]
    assert vault.locks == {} and spool.leases.state(DOC) == LeaseState.FREE
    assert spool_files(tmp_path / "spool") == []


async def test_an_owed_lease_found_after_a_crash_stays_owed_and_names_no_lock(
    vault: FakeVault, tmp_path: Path, original: Path
) -> None:
    vault.reach.move(Reach.OFFLINE, "no network")
    first = make_spool(tmp_path / "spool", vault)
    entry = await check_out(first, original)
    entry.pwrite(0, b"X")
    vault.locks[DOC] = ME  # this user's other client checks it out meanwhile
    vault.reach.move(Reach.ONLINE)
    again = make_spool(tmp_path / "spool", vault)  # the daemon died; a new start
    assert again.leases.state(DOC) == LeaseState.OWED
    await again.leases.release_stale()
    assert vault.calls["unlock"] == 0  # the other client's lock is not ours to release
    await again.flush_now()
    assert vault.locks == {DOC: ME} and vault.drafts == []
    [lost] = again.lost_records()
    assert "CHECK_IN_CONFLICT" in str(lost["error"]) and "saved offline" in str(lost["error"])


async def test_an_owed_lease_let_go_before_the_vault_is_back_asks_nothing(
    vault: FakeVault, tmp_path: Path
) -> None:
    vault.reach.move(Reach.OFFLINE, "no network")
    spool = make_spool(tmp_path / "spool", vault)
    await hold(spool)
    assert spool.leases.state(DOC) == LeaseState.OWED
    await let_go(spool)
    assert spool.leases.state(DOC) == LeaseState.FREE
    assert sum(vault.calls.values()) == 0 and spool_files(tmp_path / "spool") == []


def lose_the_locks_answer(vault: FakeVault, monkeypatch: pytest.MonkeyPatch, *, away: bool) -> None:
    """The next lock is taken and its answer lost, and the look that follows fails too:
    the vault went away (offline) when ``away``, else one blip."""
    lock, get_lock = vault.lock, vault.get_lock
    blips: list[str] = []

    async def lock_lost(doc_id: int) -> None:
        monkeypatch.setattr(vault, "lock", lock)
        await lock(doc_id)
        if away:
            vault.reach.move(Reach.OFFLINE, "the network went away")
        else:
            blips.append("the look after it")
        raise VaultUnavailable("connection reset after the request was sent")

    async def look(doc_id: int) -> dict[str, Any] | None:
        if blips:
            blips.pop()
            raise VaultUnavailable("connection reset")
        return await get_lock(doc_id)

    monkeypatch.setattr(vault, "lock", lock_lost)
    monkeypatch.setattr(vault, "get_lock", look)


async def test_a_lock_taken_as_the_vault_went_away_is_this_clients_when_it_is_back(
    vault: FakeVault, tmp_path: Path, original: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save's lock was taken, its answer lost, and the vault went away: the save is
    owed. Back online, the lock of this user it finds is the one it asked for (its mark
    says a lock was asked for), not another client's: the save checks in."""
    spool = make_spool(tmp_path / "spool", vault)
    lose_the_locks_answer(vault, monkeypatch, away=True)
    entry = await check_out(spool, original)
    assert spool.leases.state(DOC) == LeaseState.OWED and vault.locks == {DOC: ME}
    entry.pwrite(len(ORIGINAL), b"through the tunnel\n")
    with pytest.raises(VaultOffline):
        await spool.commit(entry)
    vault.reach.move(Reach.ONLINE)
    await spool.flush_now()
    assert spool.lost_records() == []
    assert vault.drafts == [(DOC, ORIGINAL + b"through the tunnel\n")]
    assert vault.calls["lock"] == 1 and vault.locks == {}
    assert spool_files(tmp_path / "spool") == []


async def test_an_owed_lock_taken_as_the_vault_went_away_again_is_this_clients(
    vault: FakeVault, tmp_path: Path, original: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved offline; back online, the owed lock is taken but its answer lost as the
    vault goes away again. The next time back, that lock is this client's."""
    vault.reach.move(Reach.OFFLINE, "no network")
    spool = make_spool(tmp_path / "spool", vault)
    entry = await check_out(spool, original)
    entry.pwrite(len(ORIGINAL), b"on the train\n")
    with pytest.raises(VaultOffline):
        await spool.commit(entry)
    vault.reach.move(Reach.ONLINE)
    lose_the_locks_answer(vault, monkeypatch, away=True)
    await spool.flush_now()
    assert spool.leases.state(DOC) == LeaseState.OWED and vault.locks == {DOC: ME}
    vault.reach.move(Reach.ONLINE)
    await spool.flush_now()
    assert spool.lost_records() == []
    assert vault.drafts == [(DOC, ORIGINAL + b"on the train\n")]
    assert vault.calls["lock"] == 1 and vault.locks == {}


async def test_a_take_whose_answer_and_look_were_lost_keeps_its_mark(
    vault: FakeVault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Online, a lock taken with its answer and the look after it lost: the take fails
    (EIO for its program), but the lock is this client's: a take again holds it (not
    "another client's", EBUSY), and a start after a crash releases it."""
    spool = make_spool(tmp_path / "spool", vault)
    lose_the_locks_answer(vault, monkeypatch, away=False)
    with pytest.raises(VaultUnavailable):
        await hold(spool)
    assert not spool.leases.held_here(DOC) and vault.locks == {DOC: ME}
    await hold(spool)
    assert spool.leases.state(DOC) == LeaseState.HELD and vault.calls["lock"] == 1
    again = make_spool(tmp_path / "spool", vault)  # the daemon died holding it
    await again.leases.release_stale()
    assert vault.locks == {} and spool_files(tmp_path / "spool") == []


async def test_a_trips_check_out_is_never_owed(vault: FakeVault, tmp_path: Path) -> None:
    vault.reach.move(Reach.OFFLINE, "no network")
    spool = make_spool(tmp_path / "spool", vault)
    with pytest.raises(VaultOffline):
        await spool.leases.take(DOC, Reason.TRIP)
    assert not spool.leases.held_here(DOC)
