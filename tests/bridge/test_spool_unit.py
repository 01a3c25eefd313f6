"""Unit tests of the write-back spool against an in-memory fake vault client.

The fake keeps documents, locks and drafts in memory and fails on demand; backoff
runs on trio's virtual clock (``autojump_clock``), so no test waits for real.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio.testing import MockClock

from vaultfs import durable
from vaultfs.bridge.write.spool import store
from vaultfs.bridge.write.spool.entry import SpoolEntry
from vaultfs.bridge.write.spool.spool import Spool, start_from
from vaultfs.client import Reachability, VaultClient
from vaultfs.errors import (
    ApiLimitExceeded,
    InsufficientAccess,
    InvalidData,
    InvalidDocument,
    LockedByOther,
    ServerException,
    VaultError,
    VaultUnavailable,
)

ME = 1
OTHER = 2
DOC = 101
ORIGINAL = b"original content\n"
DAY = 86400.0


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


class FakeVault:
    """The client methods the spool uses, over documents held in memory.

    ``fail(op, exc)`` makes the next call of ``op`` raise ``exc``; with
    ``delivered=True`` a ``create_draft`` or ``lock`` does its work first (the reply
    was lost).
    ``down`` makes every call raise VaultUnavailable.
    """

    def __init__(self) -> None:
        self.user_id: int | None = ME
        self.content: dict[int, bytes] = {DOC: ORIGINAL, DOC + 1: ORIGINAL}
        self.locks: dict[int, int] = {}
        #: the date of each lock taken through ``lock`` (others: a fixed one)
        self.lock_dates: dict[int, str] = {}
        self.drafts: list[tuple[int, bytes]] = []
        #: the file name each draft upload carried
        self.filenames: list[str | None] = []
        self.calls: defaultdict[str, int] = defaultdict(int)
        self.draft_times: list[float] = []
        self.down = False
        #: offline (``Reach.OFFLINE``): every call fails at once, as the client's do
        self.reach = Reachability()
        self._faults: defaultdict[str, list[tuple[VaultError, bool]]] = defaultdict(list)

    def fail(self, op: str, exc: VaultError, *, delivered: bool = False) -> None:
        self._faults[op].append((exc, delivered))

    async def _call(self, op: str) -> VaultError | None:
        """Count the call; raise an undelivered fault, return a delivered one."""
        self.reach.refuse(op)
        self.calls[op] += 1
        await trio.lowlevel.checkpoint()
        if self.down:
            raise VaultUnavailable("connection refused")
        if self._faults[op]:
            exc, delivered = self._faults[op].pop(0)
            if not delivered:
                raise exc
            return exc
        return None

    def _exists(self, doc_id: int) -> None:
        if doc_id not in self.content:
            raise InvalidDocument(f"no document {doc_id}")

    async def lock(self, doc_id: int) -> None:
        late_fault = await self._call("lock")
        self._exists(doc_id)
        if doc_id in self.locks:
            raise InvalidData("document is already locked")
        self.locks[doc_id] = ME
        self.lock_dates[doc_id] = f"2025-01-01T00:00:{self.calls['lock']:02d}.000Z"
        if late_fault is not None:
            raise late_fault

    async def get_lock(self, doc_id: int) -> dict[str, Any] | None:
        await self._call("get_lock")
        holder = self.locks.get(doc_id)
        if holder is None:
            return None
        since = self.lock_dates.get(doc_id, "2025-01-01T00:00:00.000Z")
        return {"locked_by__v": holder, "locked_date__v": since}

    async def unlock(self, doc_id: int) -> None:
        await self._call("unlock")
        self._exists(doc_id)
        self.locks.pop(doc_id, None)
        self.lock_dates.pop(doc_id, None)

    async def create_draft(
        self, doc_id: int, file: Path | None, *, filename: str | None = None
    ) -> tuple[int, int]:
        self.filenames.append(filename)
        self.draft_times.append(trio.current_time())
        late_fault = await self._call("create_draft")
        self._exists(doc_id)
        assert file is not None
        data = file.read_bytes()  # noqa: ASYNC240 - inline: a thread would let virtual time jump
        self.drafts.append((doc_id, data))
        self.content[doc_id] = data
        if late_fault is not None:
            raise late_fault
        return 0, len(self.drafts) + 1

    async def get_document(self, doc_id: int) -> dict[str, Any]:
        await self._call("get_document")
        self._exists(doc_id)
        document = {"id": doc_id, "md5checksum__v": md5(self.content[doc_id])}
        return {"document": {**document, "locked__v": doc_id in self.locks}}

    async def keep_alive(self) -> None:
        await self._call("keep_alive")


@pytest.fixture
def clock(autojump_clock: MockClock) -> MockClock:
    """Virtual time that jumps as soon as every task waits: exact, because the spools
    made here run their disk steps inline (``run_inline``) instead of in threads, which
    trio would take for idleness."""
    return autojump_clock


async def run_inline(fn: Any, *args: Any) -> Any:
    return fn(*args)


@pytest.fixture
def vault() -> FakeVault:
    return FakeVault()


@pytest.fixture
def spool_dir(tmp_path: Path) -> Path:
    return tmp_path / "spool"


@pytest.fixture
def original(tmp_path: Path) -> Path:
    path = tmp_path / "original.txt"
    path.write_bytes(ORIGINAL)
    return path


def make_spool(directory: Path, vault: FakeVault, **kw: Any) -> Spool:
    kw.setdefault("run_sync", run_inline)
    return Spool(directory, cast(VaultClient, vault), retry_initial=1.0, retry_max=60.0, **kw)


async def check_out(spool: Spool, original: Path, doc_id: int = DOC) -> SpoolEntry:
    return await spool.begin(
        doc_id, start_from(original, filename="report.txt", base_md5=md5(ORIGINAL))
    )


@asynccontextmanager
async def running(spool: Spool) -> AsyncIterator[Spool]:
    """The spool with its worker started, as the mount runs it."""
    async with trio.open_nursery() as nursery:
        await nursery.start(spool.run)
        yield spool
        nursery.cancel_scope.cancel()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def spool_files(directory: Path) -> list[str]:
    """The spool's files, with the marks of locks held (``locks/<doc id>``)."""
    names = [p.name for p in directory.iterdir() if p.name not in ("lost+found", "locks")]
    locks = directory / "locks"
    names += [f"locks/{p.name}" for p in locks.iterdir()] if locks.is_dir() else []
    return sorted(names)


# --- check out ---------------------------------------------------------------


async def test_begin_locks_and_copies_initial_privately(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    spool = make_spool(spool_dir, vault)
    entry = await check_out(spool, original)
    assert vault.locks == {DOC: ME}
    assert spool.entry(DOC) is entry
    assert entry.size() == len(ORIGINAL)
    assert entry.pread(0, 100) == ORIGINAL
    assert mode(spool_dir) == 0o700
    assert mode(entry.path) == 0o600
    record = spool_dir / f"{DOC}.json"
    assert mode(record) == 0o600
    saved = json.loads(record.read_text())
    assert saved["state"] == "editing"
    assert saved["base_md5"] == md5(ORIGINAL)
    assert saved["filename"] == "report.txt"


async def test_begin_without_initial_starts_empty(vault: FakeVault, spool_dir: Path) -> None:
    spool = make_spool(spool_dir, vault)
    entry = await spool.begin(DOC, start_from(None, filename="a.txt", base_md5=md5(ORIGINAL)))
    assert entry.size() == 0


async def test_begin_refused_when_another_user_holds_the_lock(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    vault.locks[DOC] = OTHER
    spool = make_spool(spool_dir, vault)
    with pytest.raises(LockedByOther):
        await check_out(spool, original)
    assert vault.locks == {DOC: OTHER}
    assert spool.entry(DOC) is None
    assert spool_files(spool_dir) == []
    assert vault.calls["unlock"] == 0


async def test_begin_allowed_when_the_lock_is_already_ours(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    """A lock this client's earlier daemon took (its mark names the lock's date)."""
    vault.locks[DOC] = ME
    spool = make_spool(spool_dir, vault)
    (spool_dir / "locks").mkdir()
    (spool_dir / "locks" / str(DOC)).write_text('{"locked_date": "2025-01-01T00:00:00.000Z"}')
    entry = await check_out(spool, original)
    assert entry.pread(0, 100) == ORIGINAL
    assert vault.locks == {DOC: ME}


async def test_begin_refused_when_this_user_holds_the_lock_on_another_client(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    """The vault lets a user lock what the user holds; the lease does not: a lock of
    this user that this client never took is another client's (EBUSY)."""
    vault.locks[DOC] = ME
    spool = make_spool(spool_dir, vault)
    with pytest.raises(LockedByOther, match="another client"):
        await check_out(spool, original)
    assert vault.locks == {DOC: ME}  # not released: not ours
    assert spool_files(spool_dir) == []
    assert vault.calls["lock"] == 0 and vault.calls["unlock"] == 0


async def test_begin_reraises_a_refusal_when_nobody_holds_the_lock(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    vault.fail("lock", InsufficientAccess("may not edit"))
    spool = make_spool(spool_dir, vault)
    with pytest.raises(InsufficientAccess):
        await check_out(spool, original)
    assert spool_files(spool_dir) == []


async def test_begin_survives_a_lost_answer_to_a_lock_that_was_taken(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    vault.fail("lock", VaultUnavailable("read timeout"), delivered=True)
    spool = make_spool(spool_dir, vault)
    entry = await check_out(spool, original)
    assert vault.locks == {DOC: ME}
    assert spool.entry(DOC) is entry


async def test_begin_fails_when_the_vault_is_down(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    vault.down = True
    spool = make_spool(spool_dir, vault)
    with pytest.raises(VaultUnavailable):
        await check_out(spool, original)
    assert spool_files(spool_dir) == []


async def test_begin_unlocks_again_when_the_spool_file_cannot_be_made(
    vault: FakeVault, spool_dir: Path, tmp_path: Path
) -> None:
    spool = make_spool(spool_dir, vault)
    with pytest.raises(FileNotFoundError):
        await spool.begin(DOC, start_from(tmp_path / "missing", filename="a", base_md5=None))
    assert vault.locks == {}
    assert spool_files(spool_dir) == []


async def test_two_opens_at_once_make_one_entry(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    spool = make_spool(spool_dir, vault)
    entries: list[SpoolEntry] = []

    async def open_one() -> None:
        entries.append(await check_out(spool, original))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(open_one)
        nursery.start_soon(open_one)
    assert entries[0] is entries[1]
    assert vault.calls["lock"] == 1


# --- check in ----------------------------------------------------------------


async def test_commit_uploads_changed_content_and_unlocks(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    spool = make_spool(spool_dir, vault)
    entry = await check_out(spool, original)
    entry.truncate(0)
    assert entry.pwrite(0, b"new content") == len(b"new content")
    entry.pwrite(4, b"CONTENT")
    entry.fsync()
    await spool.commit(entry)
    assert vault.drafts == [(DOC, b"new CONTENT")]
    assert vault.locks == {}
    assert spool.entry(DOC) is None
    assert spool_files(spool_dir) == []
    assert spool.pending() == []
    assert vault.calls["get_document"] == 1  # the one verify before the upload


async def test_the_check_in_is_shown_while_the_entry_still_answers_reads(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    """A read between the entry's removal (which awaits the disk) and the tree showing
    the new version read the version before the save: the check-in is shown first."""
    entries_when_shown: list[SpoolEntry | None] = []

    async def shown(doc_id: int, done: Any) -> None:
        entries_when_shown.append(spool.entry(doc_id))

    spool = make_spool(spool_dir, vault, on_checked_in=shown)
    entry = await check_out(spool, original)
    entry.pwrite(0, b"saved")
    await spool.commit(entry)
    assert vault.drafts == [(DOC, b"saved" + ORIGINAL[5:])]
    assert entries_when_shown == [entry]  # its content still there to read
    assert spool.entry(DOC) is None


async def test_a_draft_carries_a_vault_name_longer_than_a_local_file_name(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    """The vault takes file names a local file system does not (274 bytes here): the
    name travels as data, and no local file is ever named after it."""
    long_name = "治験実施計画書の改訂" * 9 + "最終版.txt"
    assert len(long_name.encode()) > 255
    spool = make_spool(spool_dir, vault)
    entry = await spool.begin(DOC, start_from(original, filename=long_name, base_md5=None))
    entry.pwrite(0, b"changed")
    await spool.commit(entry)
    assert vault.drafts == [(DOC, b"changed" + ORIGINAL[7:])]
    assert vault.filenames == [long_name]
    assert vault.locks == {} and spool.pending() == []
    assert spool_files(spool_dir) == []


async def test_commit_of_unchanged_content_uploads_nothing(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    spool = make_spool(spool_dir, vault)
    entry = await check_out(spool, original)
    entry.pwrite(0, ORIGINAL[:4])  # rewrites the same bytes
    await spool.commit(entry)
    assert vault.drafts == []
    assert vault.calls["create_draft"] == 0
    assert vault.locks == {}
    assert spool_files(spool_dir) == []


@pytest.mark.parametrize("error", [VaultUnavailable("down"), ServerException("boom")])
async def test_failed_commit_stays_pending_and_the_worker_retries(
    vault: FakeVault, spool_dir: Path, original: Path, clock: MockClock, error: VaultError
) -> None:
    spool = make_spool(spool_dir, vault)
    async with running(spool):
        entry = await check_out(spool, original)
        entry.pwrite(0, b"CHANGED")
        vault.fail("create_draft", error)
        vault.fail("create_draft", error)
        with pytest.raises(type(error)):
            await spool.commit(entry)
        [status] = spool.pending()
        assert status["doc_id"] == DOC
        assert status["state"] != "editing"
        assert status["attempts"] == 1
        assert error.type in status["last_error"]
        assert json.loads((spool_dir / f"{DOC}.json").read_text())["state"] == status["state"]
        assert vault.locks == {DOC: ME}  # still checked out while pending

        assert await spool.wait_idle(timeout=DAY)
    expected = b"CHANGED" + ORIGINAL[len(b"CHANGED") :]
    assert vault.drafts == [(DOC, expected)]
    assert vault.calls["create_draft"] == 3
    # backoff grows: the second retry waited longer than the first
    first, second, third = vault.draft_times
    assert third - second > second - first > 0
    assert vault.locks == {}
    assert spool_files(spool_dir) == []


async def test_rate_limit_is_retried_after_the_window(
    vault: FakeVault, spool_dir: Path, original: Path, clock: MockClock
) -> None:
    spool = make_spool(spool_dir, vault)
    async with running(spool):
        entry = await check_out(spool, original)
        entry.pwrite(0, b"X")
        vault.fail("create_draft", ApiLimitExceeded("slow down", retry_after=120.0))
        with pytest.raises(ApiLimitExceeded):
            await spool.commit(entry)
        # the vault said the call was not processed: no checksum check needed
        assert spool.pending()[0]["state"] == "pending"
        assert await spool.wait_idle(timeout=DAY)
    assert len(vault.drafts) == 1
    assert vault.draft_times[1] - vault.draft_times[0] >= 120.0
    assert vault.calls["get_document"] == 2  # each try verifies first


@pytest.mark.parametrize("arrived", [True, False])
async def test_ambiguous_failure_never_uploads_twice(
    vault: FakeVault, spool_dir: Path, original: Path, clock: MockClock, arrived: bool
) -> None:
    spool = make_spool(spool_dir, vault)
    async with running(spool):
        entry = await check_out(spool, original)
        entry.truncate(0)
        entry.pwrite(0, b"v2")
        vault.fail("create_draft", VaultUnavailable("read timeout"), delivered=arrived)
        with pytest.raises(VaultUnavailable):
            await spool.commit(entry)
        assert await spool.wait_idle(timeout=DAY)
    assert vault.drafts == [(DOC, b"v2")]
    assert vault.calls["create_draft"] == (1 if arrived else 2)
    assert vault.calls["get_document"] == 2  # the verify, then the look at what arrived
    assert vault.locks == {}


@pytest.mark.parametrize("fault", ["reply lost", "unlock failed"])
async def test_reopen_after_an_upload_that_arrived_does_not_upload_again(
    vault: FakeVault, spool_dir: Path, original: Path, fault: str
) -> None:
    spool = make_spool(spool_dir, vault)  # run() not started: the state stays as left
    entry = await check_out(spool, original)
    entry.pwrite(0, b"X")
    if fault == "reply lost":
        vault.fail("create_draft", VaultUnavailable("read timeout"), delivered=True)
        with pytest.raises(VaultUnavailable):
            await spool.commit(entry)
    else:
        vault.fail("unlock", VaultUnavailable("down"))
        await spool.commit(entry)
    again = await spool.begin(DOC, start_from(None, filename="report.txt", base_md5=None))
    assert again is entry
    await spool.commit(again)  # closed without a change
    assert len(vault.drafts) == 1
    assert vault.locks == {}
    assert spool.pending() == []


async def test_unlock_failure_after_the_draft_is_in_is_retried_quietly(
    vault: FakeVault, spool_dir: Path, original: Path, clock: MockClock
) -> None:
    spool = make_spool(spool_dir, vault)
    async with running(spool):
        entry = await check_out(spool, original)
        entry.pwrite(0, b"X")
        vault.fail("unlock", VaultUnavailable("down"))
        await spool.commit(entry)  # the draft is in: close() succeeds
        assert spool.pending()[0]["state"] == "unlocking"
        assert await spool.wait_idle(timeout=DAY)
    assert len(vault.drafts) == 1
    assert vault.calls["unlock"] == 2
    assert vault.locks == {}


@pytest.mark.parametrize(
    ("error", "unlocks"),
    [(InvalidDocument("deleted"), 0), (InsufficientAccess("withdrawn"), 1)],
)
async def test_permanent_failure_keeps_the_content_in_lost_and_found(
    vault: FakeVault, spool_dir: Path, original: Path, error: VaultError, unlocks: int
) -> None:
    spool = make_spool(spool_dir, vault)
    entry = await check_out(spool, original)
    entry.truncate(0)
    entry.pwrite(0, b"precious words")
    vault.fail("create_draft", error)
    with pytest.raises(type(error)):
        await spool.commit(entry)
    assert spool.entry(DOC) is None
    assert spool.pending() == []
    assert spool_files(spool_dir) == []
    [lost] = spool.lost_and_found()
    assert lost == spool_dir / "lost+found" / f"{DOC}-report.txt"
    assert lost.read_bytes() == b"precious words"
    assert mode(lost) == 0o600
    assert mode(lost.parent) == 0o700
    why = json.loads(lost.with_name(lost.name + ".json").read_text())
    assert why["doc_id"] == DOC
    assert why["error_type"] == error.type
    assert vault.calls["unlock"] == unlocks


async def test_lost_and_found_never_overwrites(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    spool = make_spool(spool_dir, vault)
    for text in (b"first", b"second"):
        entry = await check_out(spool, original)
        entry.truncate(0)
        entry.pwrite(0, text)
        vault.fail("create_draft", InvalidData("rejected"))
        with pytest.raises(InvalidData):
            await spool.commit(entry)
    lost = spool.lost_and_found()
    assert [p.name for p in lost] == [f"{DOC}-report (2).txt", f"{DOC}-report.txt"]
    assert sorted(p.read_bytes() for p in lost) == [b"first", b"second"]


# --- crash and replay ----------------------------------------------------------


def crash(spool: Spool) -> None:
    """What a SIGKILL leaves: the files on disk; only the fds are closed here."""
    for doc in spool.pending():
        entry = spool.entry(doc["doc_id"])
        assert entry is not None
        entry.close()


async def test_replay_after_a_crash_checks_in_open_and_pending_entries(
    vault: FakeVault, spool_dir: Path, original: Path, clock: MockClock
) -> None:
    before = make_spool(spool_dir, vault)
    open_entry = await check_out(before, original, DOC)
    open_entry.truncate(0)
    open_entry.pwrite(0, b"written, never closed")
    failed = await check_out(before, original, DOC + 1)
    failed.truncate(0)
    failed.pwrite(0, b"closed while the vault was down")
    vault.down = True
    with pytest.raises(VaultUnavailable):
        await before.commit(failed)
    crash(before)
    vault.down = False

    after = make_spool(spool_dir, vault)
    states = {p["doc_id"]: p["state"] for p in after.pending()}
    assert states[DOC] == "pending"  # was editing: its writes are checked in
    assert states[DOC + 1] != "editing"
    async with running(after):
        assert await after.wait_idle(timeout=DAY)
    assert sorted(vault.drafts) == [
        (DOC, b"written, never closed"),
        (DOC + 1, b"closed while the vault was down"),
    ]
    assert vault.locks == {}
    assert spool_files(spool_dir) == []


async def test_replay_does_not_upload_again_what_arrived_before_the_crash(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    before = make_spool(spool_dir, vault)
    entry = await check_out(before, original)
    entry.pwrite(0, b"X")
    vault.fail("create_draft", VaultUnavailable("reply lost"), delivered=True)
    with pytest.raises(VaultUnavailable):
        await before.commit(entry)
    crash(before)

    after = make_spool(spool_dir, vault)
    async with running(after):
        assert await after.wait_idle(timeout=60)
    assert len(vault.drafts) == 1
    assert vault.calls["create_draft"] == 1
    assert vault.locks == {}


async def test_replay_clears_leftovers_of_interrupted_writes(
    vault: FakeVault, spool_dir: Path
) -> None:
    await trio.Path(spool_dir).mkdir(mode=0o755)
    # a check-out that died before its record, a record write that never finished
    await trio.Path(spool_dir / "7.data").write_bytes(b"copy of the vault's content")
    await trio.Path(spool_dir / "8.json.tmp").write_text("{")
    # and the content of a check-in that was done, not yet deleted
    await trio.Path(spool_dir / "9.1234.gone").write_bytes(b"in the vault already")
    spool = make_spool(spool_dir, vault)
    assert spool.pending() == []
    assert spool_files(spool_dir) == []
    assert mode(spool_dir) == 0o700


# --- reopen, status, flush, keep-alive -----------------------------------------------


async def test_reopening_a_pending_entry_continues_from_the_spool(
    vault: FakeVault, spool_dir: Path, original: Path, clock: MockClock
) -> None:
    spool = make_spool(spool_dir, vault)
    async with running(spool):
        entry = await check_out(spool, original)
        entry.truncate(0)
        entry.pwrite(0, b"draft one")
        vault.fail("create_draft", ApiLimitExceeded("limit", retry_after=30.0))
        with pytest.raises(ApiLimitExceeded):
            await spool.commit(entry)
        again = await spool.begin(DOC, start_from(None, filename="report.txt", base_md5=None))
        assert again is entry
        assert again.pread(0, 100) == b"draft one"  # not the vault's older content
        assert spool.pending()[0]["state"] == "editing"
        await trio.sleep(600)  # well past the backoff: an open entry is not uploaded
        assert vault.calls["create_draft"] == 1
        again.pwrite(0, b"DRAFT")
        await spool.commit(again)
    assert vault.drafts == [(DOC, b"DRAFT one")]
    assert vault.calls["lock"] == 1


async def test_pending_lists_entries_oldest_first(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    spool = make_spool(spool_dir, vault)
    await check_out(spool, original, DOC)
    second = await check_out(spool, original, DOC + 1)
    second.pwrite(0, b"X")
    vault.down = True
    with pytest.raises(VaultUnavailable):
        await spool.commit(second)
    first, other = spool.pending()
    assert first["doc_id"] == DOC
    assert first["state"] == "editing"
    assert first["attempts"] == 0
    assert first["last_error"] is None
    assert other["doc_id"] == DOC + 1
    assert other["filename"] == "report.txt"
    assert other["state"] in ("pending", "uploading")
    assert other["attempts"] == 1
    assert other["last_error"].startswith("VAULT_UNAVAILABLE")
    assert other["age_seconds"] >= 0
    assert set(other) == {"doc_id", "filename", "state", "age_seconds", "attempts", "last_error"}


async def test_flush_now_and_wait_idle(
    vault: FakeVault, spool_dir: Path, original: Path, clock: MockClock
) -> None:
    spool = make_spool(spool_dir, vault)  # run() is not started: only flush_now uploads
    entry = await check_out(spool, original)
    entry.pwrite(0, b"X")
    vault.down = True
    with pytest.raises(VaultUnavailable):
        await spool.commit(entry)
    assert not await spool.wait_idle(timeout=10)
    await spool.flush_now()  # still down: stays pending
    assert spool.pending()[0]["attempts"] == 2
    vault.down = False
    await spool.flush_now()
    assert spool.pending() == []
    assert await spool.wait_idle(timeout=0)
    assert len(vault.drafts) == 1


async def test_keep_alive_only_while_an_edit_is_open(
    vault: FakeVault, spool_dir: Path, original: Path, clock: MockClock
) -> None:
    spool = make_spool(spool_dir, vault, keepalive_interval=100.0)
    async with running(spool):
        await trio.sleep(350)
        assert vault.calls["keep_alive"] == 0
        entry = await check_out(spool, original)
        await trio.sleep(350)
        assert vault.calls["keep_alive"] >= 3
        await spool.commit(entry)
        calls = vault.calls["keep_alive"]
        await trio.sleep(350)
        assert vault.calls["keep_alive"] == calls


# --- the md5 kept while writing, the fsync during the upload ------------------------


MakeEntry = Callable[[Path | None], SpoolEntry]


def hashed_entry(directory: Path, initial: Path | None) -> SpoolEntry:
    """An entry made as a check-out makes it (without the vault: only its content
    matters here); the caller closes it."""
    durable.ensure_private_dir(directory)
    record = store.EntryRecord(doc_id=DOC, filename="a.bin", base_md5=None, state="editing")
    fd, running_md5 = store.create_entry(directory, record, initial)
    return SpoolEntry(directory, record, fd, running_md5)


@pytest.fixture
def make_entry(tmp_path: Path) -> Iterator[MakeEntry]:
    made: list[SpoolEntry] = []

    def make(initial: Path | None) -> SpoolEntry:
        made.append(hashed_entry(tmp_path / "spool", initial))
        return made[-1]

    yield make
    for entry in made:
        entry.close()


def file_md5(entry: SpoolEntry) -> str:
    return md5(entry.path.read_bytes())


def test_sequential_writes_keep_the_md5(make_entry: MakeEntry) -> None:
    entry = make_entry(None)
    assert entry.md5() == md5(b"")
    for n in range(5):
        entry.pwrite(entry.size(), bytes([n]) * (70_000 + n))
    assert entry.md5() == file_md5(entry)


def test_append_after_a_copy_keeps_the_md5(make_entry: MakeEntry, original: Path) -> None:
    entry = make_entry(original)
    assert entry.md5() == md5(ORIGINAL)
    entry.pwrite(len(ORIGINAL), b"appended\n")
    assert entry.md5() == file_md5(entry) == md5(ORIGINAL + b"appended\n")


def test_an_entry_found_on_disk_has_no_md5_to_follow(make_entry: MakeEntry, original: Path) -> None:
    entry = make_entry(original)
    reloaded = SpoolEntry(entry.path.parent, entry.record, os.open(entry.path, os.O_RDWR))
    try:
        reloaded.pwrite(len(ORIGINAL), b"more")
        assert reloaded.md5() is None
    finally:
        reloaded.close()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda e: e.pwrite(0, b"O"), id="overwrite"),
        pytest.param(lambda e: e.pwrite(e.size() + 1, b"x"), id="hole"),
        pytest.param(lambda e: e.truncate(3), id="shorter"),
        pytest.param(lambda e: e.truncate(e.size() + 10), id="longer"),
    ],
)
def test_any_other_change_gives_the_md5_up(
    make_entry: MakeEntry, original: Path, change: Callable[[SpoolEntry], object]
) -> None:
    entry = make_entry(original)
    change(entry)
    assert entry.md5() is None
    entry.pwrite(entry.size(), b"appended")  # never resumes past a change it missed
    assert entry.md5() is None
    entry.truncate(0)  # O_TRUNC, or a file renamed over the edit: starts over
    entry.pwrite(0, b"new")
    assert entry.md5() == file_md5(entry) == md5(b"new")


def test_truncating_to_the_same_size_keeps_the_md5(make_entry: MakeEntry, original: Path) -> None:
    entry = make_entry(original)
    entry.truncate(len(ORIGINAL))
    assert entry.md5() == md5(ORIGINAL)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.binary(max_size=40)),
            st.tuples(st.just("write"), st.integers(0, 60), st.binary(max_size=40)),
            st.tuples(st.just("truncate"), st.integers(0, 60)),
        ),
        max_size=12,
    ),
    copied=st.booleans(),
)
def test_a_known_md5_is_always_that_of_the_file(
    tmp_path: Path, original: Path, ops: list[tuple[Any, ...]], copied: bool
) -> None:
    entry = hashed_entry(tmp_path / "spool", original if copied else None)
    try:
        for op in ops:
            if op[0] == "append":
                entry.pwrite(entry.size(), op[1])
            elif op[0] == "write":
                entry.pwrite(op[1], op[2])
            else:
                entry.truncate(op[1])
            known = entry.md5()
            assert known is None or known == file_md5(entry)
    finally:
        entry.close()


async def test_a_check_in_after_sequential_writes_does_not_hash_the_file(
    vault: FakeVault, spool_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_hashing_pass(path: Path) -> str:
        raise AssertionError(f"{path} was hashed again")

    monkeypatch.setattr(store, "md5_of", no_hashing_pass)
    spool = make_spool(spool_dir, vault)
    entry = await spool.begin(DOC, start_from(None, filename="a.txt", base_md5=md5(ORIGINAL)))
    entry.truncate(0)
    entry.pwrite(0, b"first ")
    entry.pwrite(6, b"second")
    await spool.commit(entry)
    assert vault.drafts == [(DOC, b"first second")]
    assert vault.locks == {}


async def test_a_check_in_after_an_overwrite_hashes_the_file(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    spool = make_spool(spool_dir, vault)
    entry = await check_out(spool, original)
    entry.pwrite(0, b"O")
    entry.pwrite(0, ORIGINAL[:1])  # back to the content checked out
    await spool.commit(entry)
    assert vault.calls["create_draft"] == 0  # the md5 of the file says: unchanged


class GatedSync:
    """A ``run_sync`` that runs steps inline, except the check-in's fsync, which waits
    until ``release`` (a slow disk)."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.synced = False

    async def __call__(self, fn: Any, *args: Any) -> Any:
        if getattr(fn, "__name__", "") == "_fsync_and_close":
            await self.release.wait()
            fn(*args)
            self.synced = True
            return None
        return fn(*args)


async def test_the_upload_does_not_wait_for_the_fsync(
    vault: FakeVault, spool_dir: Path, original: Path, clock: MockClock
) -> None:
    gate = GatedSync()
    spool = make_spool(spool_dir, vault, run_sync=gate)
    entry = await check_out(spool, original)
    entry.truncate(0)
    entry.pwrite(0, b"new")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(spool.commit, entry)
        await trio.testing.wait_all_tasks_blocked()
        assert len(vault.drafts) == 1  # uploaded while the content was being synced
        assert not gate.synced
        gate.release.set()
    assert gate.synced and vault.locks == {}


async def test_a_failed_check_in_reports_only_once_the_content_is_durable(
    vault: FakeVault, spool_dir: Path, original: Path, clock: MockClock
) -> None:
    gate = GatedSync()
    spool = make_spool(spool_dir, vault, run_sync=gate)
    entry = await check_out(spool, original)
    entry.truncate(0)
    entry.pwrite(0, b"new")
    vault.down = True
    failed_at: list[float] = []

    async def close_it() -> None:
        with pytest.raises(VaultUnavailable):
            await spool.commit(entry)
        failed_at.append(trio.current_time())
        assert gate.synced

    async with trio.open_nursery() as nursery:
        nursery.start_soon(close_it)
        await trio.sleep(10)
        assert failed_at == [] and vault.calls["get_document"] == 1  # tried at once (the verify)
        gate.release.set()
    assert failed_at == [10.0]
    assert spool.entry(DOC) is entry  # kept for the worker


async def test_replay_after_a_power_loss_during_an_upload_that_arrived(
    vault: FakeVault, spool_dir: Path, original: Path
) -> None:
    before = make_spool(spool_dir, vault)
    entry = await check_out(before, original)
    entry.truncate(0)
    entry.pwrite(0, b"all of it")
    vault.fail("create_draft", VaultUnavailable("reply lost"), delivered=True)
    with pytest.raises(VaultUnavailable):
        await before.commit(entry)
    crash(before)
    # The upload ran while the content was fsynced: a power loss may leave it torn.
    (spool_dir / f"{DOC}.data").write_bytes(b"all \0\0\0\0\0")

    after = make_spool(spool_dir, vault)
    async with running(after):
        assert await after.wait_idle(timeout=60)
    assert vault.drafts == [(DOC, b"all of it")]  # the torn file is not sent
    assert vault.locks == {}
    assert spool_files(spool_dir) == []
