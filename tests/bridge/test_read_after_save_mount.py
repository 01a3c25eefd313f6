"""What a read sees after a save (docs/writing.md, "What a read sees"), on real mounts
at the default poll interval, under CPU load (burner processes beside it: ``BURNERS``):
loops of appends, shorter overwrites and rename-over saves, each followed by reads
that start after the writer's close (``cat``, an open and read, a new mmap, a stat),
a read through a descriptor held open across the save, the same after ``vaultfs
sync``, and on another mount of the same vault after ``vaultfs refresh``. Every read
must give the save's bytes and size, never the ones before it."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.bridge.test_notifications import CHECKLIST
from tests.bridge.test_sync_mount import sync
from tests.conftest import admin_client
from tests.programs import end_group
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess

pytestmark = pytest.mark.skipif(not can_mount(), reason="needs /dev/fuse and fusermount3")

#: saves in the loop (a third of each kind), each read back six ways, and the burner
#: processes spinning beside it; more for a stress run of its own (90 saves and two
#: burners found the held descriptor's stale reads: docs/writing.md), fewer in the
#: suite, whose other tests share the cores
ITERATIONS = int(os.environ.get("VAULTFS_READ_ITERATIONS", "18"))
BURNERS = int(os.environ.get("VAULTFS_READ_BURNERS", "1"))

#: a reader of its own (not this process: every program the test starts would inherit
#: its descriptor): holds the file open from the start, and on each line read answers
#: "SIZE LENGTH MD5" (fstat's size, the bytes read) of what the held descriptor reads
#: ("held") or of a new map of the file, private or shared ("private", "shared")
_READER = r"""
import hashlib, mmap, os, sys
path = sys.argv[1]
held = os.open(path, os.O_RDONLY)
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "held":
        size = os.fstat(held).st_size
        data = os.pread(held, 1 << 24, 0)
    else:
        fd = os.open(path, os.O_RDONLY)
        size = os.fstat(fd).st_size
        if size:
            flags = mmap.MAP_PRIVATE if line.strip() == "private" else mmap.MAP_SHARED
            with mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ) as mapped:
                data = bytes(mapped)
        else:
            data = b""
        os.close(fd)
    print(size, len(data), hashlib.md5(data).hexdigest(), flush=True)
"""


class _Reader:
    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _READER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._line() == "ready"

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def ask(self, what: str) -> tuple[int, int, str]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        size, length, md5 = self._line().split()
        return int(size), int(length), md5

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def burners() -> Iterator[None]:
    """Processes spinning on the cores while the test runs (``BURNERS``)."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(BURNERS)
    ]
    try:
        yield
    finally:
        for proc in procs:
            end_group(proc)


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _save(kind: str, path: Path, before: bytes, n: int) -> bytes:
    """One save of ``kind`` through a real program; the content it leaves."""
    line = f"line {n} of the loop\n".encode()
    if kind == "append":
        after = before + line
        subprocess.run(["sh", "-c", 'printf %s "$1" >> "$2"', "sh", line, path], check=True)
    elif kind == "shorter":
        after = before[: max(1, len(before) // 2)] + line
        assert len(after) < len(before) or len(before) < 2
        subprocess.run(["sh", "-c", 'printf %s "$1" > "$2"', "sh", after, path], check=True)
    else:  # written beside, then renamed over (rsync, gio, sed -i)
        after = line + before[:200]
        temporary = path.parent / f".{path.name}.{n}.tmp"
        subprocess.run(
            ["sh", "-c", 'printf %s "$1" > "$2" && mv -f "$2" "$3"', "sh", after, temporary, path],
            check=True,
        )
    return after


def test_every_read_after_a_save_sees_the_save_on_this_mount_and_after_a_refresh(
    burners: None, fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    with (
        MountProcess(fresh_vault.url, tmp_path / "a") as mount,
        MountProcess(fresh_vault.url, tmp_path / "b") as other,
        admin_client(fresh_vault.url) as api,
    ):
        path, there = mount.mountpoint / CHECKLIST, other.mountpoint / CHECKLIST
        content = path.read_bytes()
        assert there.read_bytes() == content  # both mounts hold it in their caches
        doc_id = int(os.getxattr(path.parent, "user.vault.id"))
        reader, reader_there = _Reader(path), _Reader(there)
        try:
            stale: list[str] = []
            #: every content the file held: a descriptor held open across saves reads
            #: one of them whole (the version it opened, as a file replaced by rename
            #: keeps the old one), never a mix
            held = {_md5(content)}
            for n in range(ITERATIONS):
                kind = ("append", "shorter", "rename")[n % 3]
                content = _save(kind, path, content, n)
                # A shared map of a file whose check-in is under way is ENODEV (served
                # from the spool with direct_io: docs/bridge.md, "Read-write opens and
                # mmap"); a private one works on every file.
                _check(
                    stale, f"{n} {kind}: right after the close", path, content, reader, "private"
                )
                held.add(_md5(content))
                size, length, md5 = reader.ask("held")
                if md5 not in held or size != length:
                    stale.append(f"{n} {kind}: the held descriptor read {length} of {size} bytes")
                done = sync(path)
                assert done.returncode == 0, done.stdout + done.stderr
                _check(stale, f"{n} {kind}: after vaultfs sync", path, content, reader, "shared")
                assert _vault(api, doc_id) == content
                other.refresh()
                if (there.read_bytes(), there.stat().st_size) != (content, len(content)):
                    stale.append(f"{n} {kind}: the other mount after vaultfs refresh")
                # A descriptor held open there reads the other client's save too.
                if reader_there.ask("held") != (len(content), len(content), _md5(content)):
                    stale.append(f"{n} {kind}: a descriptor held on the other mount")
            assert stale == [], f"{len(stale)} stale reads in {ITERATIONS} saves: {stale}"
        finally:
            reader.close()
            reader_there.close()


def _check(
    stale: list[str], when: str, path: Path, content: bytes, reader: _Reader, mapped: str
) -> None:
    """Every way a program reads the file after a save's close."""
    seen = {
        "cat": subprocess.run(["cat", path], capture_output=True, check=True).stdout,
        "read": path.read_bytes(),
    }
    for how, data in seen.items():
        if data != content:
            stale.append(f"{when}: {how} gave {len(data)} bytes, not the save's {len(content)}")
    if path.stat().st_size != len(content):
        stale.append(f"{when}: stat said {path.stat().st_size}, not {len(content)}")
    if reader.ask(mapped) != (len(content), len(content), _md5(content)):
        stale.append(f"{when}: a new {mapped} map did not hold the save")


def _vault(api: httpx.Client, doc_id: int) -> bytes:
    return api.get(f"/objects/documents/{doc_id}/file").content
