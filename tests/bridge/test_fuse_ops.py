"""The FUSE operations' translation, without a kernel: pyfuse3's own types are built and
read directly, over the file system of a fake vault."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pyfuse3
import pytest
import trio
import trio.testing

from vaultfs import errors
from vaultfs.bridge.content.sources import source_key
from vaultfs.bridge.daemon.capabilities import Capabilities
from vaultfs.bridge.daemon.fuse import FuseOps
from vaultfs.bridge.daemon.fuse.kernel_cache import invalidate_attr, kept_opens
from vaultfs.bridge.daemon.name_events import STAND_IN_INODES, Event, NameEvents, Sort
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.inodes import ROOT_INODE
from vaultfs.bridge.fs.opening import Opened
from vaultfs.testing.vault_process import wait_until

from .fakevault import FakeVault


async def _lookup(ops: FuseOps, *names: str) -> pyfuse3.EntryAttributes:
    entry = await ops.getattr(ROOT_INODE, None)
    for name in names:
        entry = await ops.lookup(entry.st_ino, os.fsencode(name), None)
    return entry


async def test_entries_carry_the_attributes_and_timeouts(core: FileSystem) -> None:
    ops = FuseOps(core)
    root = await ops.getattr(ROOT_INODE, None)
    assert root.st_ino == ROOT_INODE and stat.S_ISDIR(root.st_mode)
    entry = await _lookup(ops, "Reference", "Guide", "guide.txt")
    assert stat.S_ISREG(entry.st_mode) and entry.st_mode & 0o777 == 0o644
    # the record's size__v estimate (in KB) until a download tells the exact size
    assert entry.st_size == 1024 and entry.st_blocks == 2 and entry.st_nlink == 1
    assert entry.entry_timeout == core.options.attr_timeout
    assert entry.st_atime_ns == entry.st_mtime_ns > 0


async def test_open_and_read_give_the_file_info_and_bytes(core: FileSystem) -> None:
    ops = FuseOps(core)
    entry = await _lookup(ops, "Reference", "Guide", "guide.txt")
    info = await ops.open(entry.st_ino, os.O_RDONLY, None)  # type: ignore[arg-type]
    assert isinstance(info, pyfuse3.FileInfo) and info.fh > 0
    assert await ops.read(info.fh, 0, 100) == b"guide\n"
    await ops.release(info.fh)
    with pytest.raises(pyfuse3.FUSEError) as raised:
        await ops.read(info.fh, 0, 100)
    assert raised.value.errno == errno.EBADF


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda ops: ops.lookup(ROOT_INODE, b"nothing here", None), errno.ENOENT),
        (lambda ops: ops.getattr(999_999, None), errno.ENOENT),
        (lambda ops: ops.getxattr(ROOT_INODE, b"user.vault.nothing", None), errno.ENODATA),
        (lambda ops: ops.getxattr(ROOT_INODE, b"system.posix_acl_access", None), errno.ENOTSUP),
        (lambda ops: ops.getxattr(ROOT_INODE, b"security.selinux", None), errno.ENOTSUP),
        (lambda ops: ops.mkdir(ROOT_INODE, b"new", 0o755, None), errno.EPERM),
    ],
    ids=[
        "unknown name",
        "unknown inode",
        "not a field",
        "no ACLs",
        "a namespace not supported",
        "mkdir at the root",
    ],
)
async def test_errors_become_their_errno(core: FileSystem, call: object, expected: int) -> None:
    ops = FuseOps(core)
    with pytest.raises(pyfuse3.FUSEError) as raised:
        await call(ops)  # type: ignore[operator]
    assert raised.value.errno == expected


async def test_an_unexpected_failure_is_eio_and_logged_with_the_path(
    core: FileSystem, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ops = FuseOps(core)

    async def broken(ino: int) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(core, "getattr", broken)
    with pytest.raises(pyfuse3.FUSEError) as raised:
        await ops.getattr(ROOT_INODE, None)  # type: ignore[arg-type]
    assert raised.value.errno == errno.EIO
    assert raised.value.__suppress_context__
    assert "getattr(/) failed unexpectedly" in caplog.text and "a bug" in caplog.text


async def test_vault_errors_map_through_the_errno_table(core: FileSystem, vault: FakeVault) -> None:
    ops = FuseOps(core, Capabilities())  # the stock way: a refusal is the opendir's
    document = await _lookup(ops, "Reference", "Guide")
    vault.forbidden.add(2)
    versions = await ops.lookup(document.st_ino, b"versions", None)
    with pytest.raises(pyfuse3.FUSEError) as raised:
        await ops.opendir(versions.st_ino, None)
    assert raised.value.errno == errors.errno_for(errors.InsufficientAccess()) == errno.EACCES


async def test_without_opendir_readdir_is_given_the_inode(
    core: FileSystem, vault: FakeVault
) -> None:
    ops = FuseOps(core, Capabilities(no_opendir=True))
    document = await _lookup(ops, "Reference", "Guide")
    with pytest.raises(pyfuse3.FUSEError) as raised:
        await ops.opendir(document.st_ino, None)
    assert raised.value.errno == errno.ENOSYS  # the kernel stops asking, for every directory
    vault.forbidden.add(2)
    versions = await ops.lookup(document.st_ino, b"versions", None)
    with pytest.raises(pyfuse3.FUSEError) as raised:  # the refusal comes with the listing
        await ops.readdir(versions.st_ino, 0, None)  # type: ignore[arg-type]
    assert raised.value.errno == errno.EACCES


async def test_unexpected_exceptions_become_eio(core: FileSystem) -> None:
    ops = FuseOps(core)

    async def broken(ino: int) -> None:
        raise RuntimeError("a bug")

    core.getattr = broken  # type: ignore[method-assign,assignment]
    with pytest.raises(pyfuse3.FUSEError) as raised:
        await ops.getattr(ROOT_INODE, None)
    assert raised.value.errno == errno.EIO


async def test_statfs_fills_statvfs_data(core: FileSystem) -> None:
    data = await FuseOps(core).statfs(None)  # type: ignore[arg-type]
    assert isinstance(data, pyfuse3.StatvfsData)
    assert data.f_bsize == data.f_frsize == 4096
    assert data.f_blocks >= data.f_bfree == data.f_bavail
    assert data.f_files == 4 and data.f_namemax == 255


async def test_xattrs_are_bytes_both_ways(core: FileSystem) -> None:
    ops = FuseOps(core)
    document = await _lookup(ops, "Reference", "Guide")
    names = await ops.listxattr(document.st_ino, None)  # type: ignore[arg-type]
    assert b"user.vault.name__v" in names
    assert await ops.getxattr(document.st_ino, b"user.vault.name__v", None) == b"Guide"  # type: ignore[arg-type]


def _events() -> NameEvents:
    return NameEvents(
        "/nonexistent", forget=lambda parent, name: None, delete=lambda parent, name, ino: None
    )


async def test_the_name_events_thread_alone_is_answered_apart_for_a_create(
    core: FileSystem,
) -> None:
    events = _events()
    ops = FuseOps(core, events=events)
    folder = await _lookup(ops, "Reference")
    guide = await ops.lookup(folder.st_ino, b"Guide", SimpleNamespace(pid=100))  # type: ignore[arg-type]
    # The state of the thread while its mkdir of Reference/Guide is under way.
    events._tid = 4242
    events._pending = Event(Sort.CREATE_DIR, folder.st_ino, "Reference", "Guide")
    own, other = SimpleNamespace(pid=4242), SimpleNamespace(pid=100)
    with pytest.raises(pyfuse3.FUSEError) as raised:
        await ops.lookup(folder.st_ino, b"Guide", own)  # type: ignore[arg-type]
    assert raised.value.errno == errno.ENOENT
    assert (await ops.lookup(folder.st_ino, b"Guide", other)).st_ino == guide.st_ino  # type: ignore[arg-type]
    made = await ops.mkdir(folder.st_ino, b"Guide", 0o755, own)  # type: ignore[arg-type]
    assert made.st_ino == guide.st_ino and stat.S_ISDIR(made.st_mode)
    # Any other call of that thread changes nothing.
    for call in (
        ops.mkdir(folder.st_ino, b"Other", 0o755, own),  # type: ignore[arg-type]
        ops.rmdir(folder.st_ino, b"Guide", own),  # type: ignore[arg-type]
        ops.unlink(folder.st_ino, b"Guide", own),  # type: ignore[arg-type]
    ):
        with pytest.raises(pyfuse3.FUSEError) as raised:
            await call
        assert raised.value.errno == errno.ENOENT
    with pytest.raises(pyfuse3.FUSEError):
        await ops.lookup(folder.st_ino, b"Other", other)  # type: ignore[arg-type]


async def test_a_create_event_for_a_name_the_kernel_holds_by_then_is_answered_as_any_lookup(
    core: FileSystem,
) -> None:
    # A program looked the name up after the create was announced: the kernel's look
    # again (for the exclusive mkdir) must not be told ENOENT, which would make it
    # forget the name (someone's working directory, maybe) and raise a false IN_CREATE.
    events = _events()
    ops = FuseOps(core, events=events)
    folder = await _lookup(ops, "Reference")
    guide = await ops.lookup(folder.st_ino, b"Guide", SimpleNamespace(pid=100))  # type: ignore[arg-type]
    events._tid = 4242
    events._pending = Event(Sort.CREATE_DIR, folder.st_ino, "Reference", "Guide", held=lambda: True)
    own = SimpleNamespace(pid=4242)
    assert (await ops.lookup(folder.st_ino, b"Guide", own)).st_ino == guide.st_ino  # type: ignore[arg-type]


@pytest.mark.parametrize("sort", [Sort.DELETE_FILE, Sort.DELETE_DIR])
async def test_the_name_events_thread_alone_is_answered_apart_for_a_delete(
    core: FileSystem, sort: Sort
) -> None:
    events = _events()
    ops = FuseOps(core, events=events)
    folder = await _lookup(ops, "Reference")
    other = SimpleNamespace(pid=100, uid=0, gid=0)
    guide = await ops.lookup(folder.st_ino, b"Guide", other)  # type: ignore[arg-type]
    # The thread deletes the name Reference/Gone, the kernel held it as inode 77.
    events._tid = 4242
    events._pending = Event(sort, folder.st_ino, "Reference", "Gone", 77, STAND_IN_INODES + 5)
    own = SimpleNamespace(pid=4242, uid=1000, gid=1000)
    entry = await ops.lookup(folder.st_ino, b"Gone", own)  # type: ignore[arg-type]
    assert entry.st_ino == STAND_IN_INODES + 5 and entry.entry_timeout == entry.attr_timeout == 0
    assert stat.S_ISDIR(entry.st_mode) == (sort is Sort.DELETE_DIR) and entry.st_uid == 1000
    wrong, right = (ops.unlink, ops.rmdir) if sort is Sort.DELETE_DIR else (ops.rmdir, ops.unlink)
    with pytest.raises(pyfuse3.FUSEError) as raised:
        await wrong(folder.st_ino, b"Gone", own)  # type: ignore[arg-type]
    assert raised.value.errno == errno.ENOENT
    await right(folder.st_ino, b"Gone", own)  # type: ignore[arg-type]
    # A delete of another name by that thread deletes nothing; other programs are
    # answered as ever, and the kernel's forget of the stand-in is nothing to the mount.
    with pytest.raises(pyfuse3.FUSEError) as raised:
        await right(folder.st_ino, b"Guide", own)  # type: ignore[arg-type]
    assert raised.value.errno == errno.ENOENT
    await ops.forget([(STAND_IN_INODES + 5, 1)])
    assert (await ops.lookup(folder.st_ino, b"Guide", other)).st_ino == guide.st_ino  # type: ignore[arg-type]
    assert core.inodes.key(STAND_IN_INODES + 5) is None


async def test_without_opendir_a_listing_is_read_on_from_where_the_kernel_lost_it(
    core: FileSystem, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A kept listing whose later page the kernel reclaimed is asked for from that
    page's first entry, with no listing under way: answered from there, and logged."""
    replied: list[tuple[bytes, int]] = []

    def reply(token: object, name: bytes, attr: object, next_id: int) -> bool:
        replied.append((name, next_id))
        return True

    monkeypatch.setattr(pyfuse3, "readdir_reply", reply)
    ops = FuseOps(core, Capabilities(no_opendir=True))
    folder = await _lookup(ops, "Reference")
    await ops.readdir(folder.st_ino, 0, None)  # type: ignore[arg-type]
    whole = list(replied)
    assert len(whole) >= 2
    await ops.readdir(folder.st_ino, whole[-1][1], None)  # type: ignore[arg-type]  # the end
    replied.clear()
    with caplog.at_level("DEBUG", logger="vaultfs.bridge.daemon.fuse.listing_by_inode"):
        await ops.readdir(folder.st_ino, whole[0][1], None)  # type: ignore[arg-type]
    assert replied == whole[1:]
    assert f"inode {folder.st_ino} listed from entry {whole[0][1]} on" in caplog.text


async def test_a_warm_read_only_open_is_kept_unless_an_invalidation_came_meanwhile(
    core: FileSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    ops = FuseOps(core, Capabilities(kept_opens=True))
    ino = (await _lookup(ops, "Reference", "Guide", "guide.txt")).st_ino
    try:
        first = await ops.open(ino, os.O_RDONLY, None)  # type: ignore[arg-type]
        assert await ops.read(first.fh, 0, 100) == b"guide\n"
        await ops.release(first.fh)
        assert ino not in kept_opens  # the kernel did not keep its pages yet
        key = core.inodes.key(ino)
        assert key is not None
        content_key = source_key(key.doc_id, core.tree.record(key.doc_id))
        await trio.testing.wait_all_tasks_blocked()  # the download went into the cache
        assert core.blobs.is_cached(content_key)

        opening = core.open

        async def open_while_invalidated(inode: int, flags: int) -> Opened:
            opened = await opening(inode, flags)
            invalidate_attr(inode)  # e.g. the index learned a new version meanwhile
            return opened

        monkeypatch.setattr(core, "open", open_while_invalidated)
        second = await ops.open(ino, os.O_RDONLY, None)  # type: ignore[arg-type]
        assert ino not in kept_opens
        monkeypatch.undo()

        third = await ops.open(ino, os.O_RDONLY, None)  # type: ignore[arg-type]
        assert kept_opens[ino] == third.fh == second.fh  # one handle for every such open
        # A release of the shared handle that reaches the mount leaves it readable.
        await ops.release(third.fh)
        assert await ops.read(second.fh, 0, 100) == b"guide\n"
        invalidate_attr(ino)
        assert ino not in kept_opens  # the next open reaches the mount
    finally:
        kept_opens.pop(ino, None)


def test_the_calls_that_raise_name_events_come_from_a_process_of_their_own(
    tmp_path: Path,
) -> None:
    """A daemon SIGKILLed while one of its own threads waited on a call through its own
    mount stayed a zombie holding /dev/fuse: the mount hung every program touching it.
    The calls come from a helper process instead, which the kill does not hold up:
    here over a plain directory, the helper's mkdir and unlink are made, and the
    requests a mount would see come from its pid, no thread of the daemon's."""
    (tmp_path / "Folder").mkdir()
    (tmp_path / "Folder" / "gone.txt").write_bytes(b"")
    forgotten: list[tuple[int, str, int]] = []
    events = NameEvents(
        str(tmp_path),
        forget=lambda parent, name: None,
        delete=lambda parent, name, ino: forgotten.append((parent, name, ino)),
    )
    try:
        events.created(1, "Folder", "New Document")
        events.deleted(1, "Folder", "gone.txt", 77, is_dir=False)
        wait_until(
            lambda: (
                (tmp_path / "Folder" / "New Document").is_dir()
                and not (tmp_path / "Folder" / "gone.txt").exists()
            ),
            timeout=10,
            what="the helper's calls",
        )
        assert forgotten == [(1, "gone.txt", 77)]
        helper = events._tid
        assert helper not in (0, os.getpid())
        assert not os.path.exists(f"/proc/{os.getpid()}/task/{helper}")  # not a thread
        with open(f"/proc/{helper}/status") as status:
            assert f"PPid:\t{os.getpid()}" in status.read()
        # No descriptor of this process's (a daemon's /dev/fuse) went with it.
        assert sorted(os.listdir(f"/proc/{helper}/fd")) == ["0", "1", "2"]
        assert events.own(helper) and not events.own(os.getpid())
    finally:
        events.close()
    wait_until(lambda: not os.path.exists(f"/proc/{helper}/fd/0"), timeout=10, what="its end")
