"""davfs2 (Debian's WebDAV file system) mounting the front: ``cp`` over a document's
source file and a vim save are each one version with the exact bytes, and the
document is checked in once the mount is gone.

davfs2 1.6 answers ``ls`` with EINVAL on Linux 6.16 and later unless its message
buffer is raised (``buf_size 64``; docs/user-guide.md, "davfs2"): the configuration
written here is the one the guide gives."""

from __future__ import annotations

import contextlib
import grp
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.webdav.test_webdav_front import api_calls, latest_bytes, record, version_count
from vaultfs.testing.webdav_process import WebdavProcess

pytestmark = pytest.mark.skipif(
    shutil.which("mount.davfs") is None or os.geteuid() != 0 or not Path("/dev/fuse").exists(),
    reason="needs davfs2, root and /dev/fuse",
)

#: the API calls one save through davfs2 may cost (lock, check-out, upload, check-in,
#: the lock taken again and released, the listings davfs2 asks for)
MAX_CALLS_A_SAVE = 30


@contextlib.contextmanager
def davfs(front: WebdavProcess, root: Path, conf_extra: str = "") -> Iterator[Path]:
    """The front mounted by davfs2 at a new directory; unmounted (every upload of
    davfs2 done: umount waits for it) when the block ends. ``conf_extra``: lines
    added to davfs2's configuration."""
    mountpoint, conf = root / "mnt", root / "davfs2.conf"
    mountpoint.mkdir()
    # davfs2 keeps its cache as its own user and group: a directory it can reach (the
    # test's own is private to root).
    cache = Path(tempfile.mkdtemp(prefix="vaultfs-davfs2-"))
    cache.chmod(0o775)
    os.chown(cache, 0, grp.getgrnam("davfs2").gr_gid)
    secrets = root / "secrets"
    secrets.write_text(f"{front.address}/ anonymous none\n")
    secrets.chmod(0o600)
    conf.write_text(
        f"secrets {secrets}\ncache_dir {cache}\nuse_locks 1\ndelay_upload 0\nbuf_size 64\n"
        + conf_extra
    )
    try:
        mounted = subprocess.run(
            ["mount", "-t", "davfs", "-o", f"conf={conf}", front.address + "/", str(mountpoint)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert mounted.returncode == 0, mounted.stderr
        try:
            yield mountpoint
        finally:
            subprocess.run(
                ["umount", str(mountpoint)], check=True, capture_output=True, timeout=120
            )
    finally:
        shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture
def dav(front: WebdavProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=front.address, timeout=60) as client:
        yield client


def test_ls_and_cp_over_a_source_file_is_one_version(
    front: WebdavProcess, dav: httpx.Client, module_api: httpx.Client, tmp_path: Path
) -> None:
    versions = version_count(module_api, 2)
    content = os.urandom(200_000)
    local = tmp_path / "local.txt"
    local.write_bytes(content)
    calls = api_calls(dav)
    with davfs(front, tmp_path) as mnt:
        assert "General" in os.listdir(mnt)  # EINVAL here without buf_size
        folder = mnt / "General" / "Meeting Notes"
        assert "Meeting_Notes.txt" in os.listdir(folder)
        subprocess.run(["cp", str(local), str(folder / "Meeting_Notes.txt")], check=True)
    assert version_count(module_api, 2) == versions + 1
    assert latest_bytes(module_api, 2) == content
    assert record(module_api, 2)["document"]["locked__v"] is False
    assert api_calls(dav) - calls <= MAX_CALLS_A_SAVE


def test_a_vim_save_is_one_version(
    front: WebdavProcess, dav: httpx.Client, module_api: httpx.Client, tmp_path: Path
) -> None:
    versions = version_count(module_api, 8)
    before = latest_bytes(module_api, 8)
    calls = api_calls(dav)
    with davfs(front, tmp_path) as mnt:
        path = mnt / "General" / "Release Checklist" / "Release_Checklist.md"
        edit = ["-c", "set backupskip=", "-c", "1s/^/vim: /", "-c", "wq"]
        vim = ["vim", "-es", "-u", "NONE", *edit, str(path)]
        subprocess.run(vim, check=True, timeout=120, stdin=subprocess.DEVNULL)
    assert version_count(module_api, 8) == versions + 1
    assert latest_bytes(module_api, 8) == b"vim: " + before
    assert record(module_api, 8)["document"]["locked__v"] is False
    assert api_calls(dav) - calls <= MAX_CALLS_A_SAVE
