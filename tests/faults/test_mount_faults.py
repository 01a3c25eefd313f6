"""Faults around a mount as users meet them: two mounts at once, a full cache disk.

Each test starts real ``vaultfs serve`` and ``vaultfs mount`` processes and checks
what reaches the vault through its API."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import EDITOR, VIEWER, login
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import DEMO_PASSWORD, VaultProcess, wait_until

pytestmark = pytest.mark.mount

API = "/api/v25.1"
CHECKLIST = "General/Release Checklist/Release_Checklist.md"


def mount_refusal(url: str, mountpoint: Path, cache_dir: Path) -> str:
    """Run a mount that must be refused; return what it said (it must not mount)."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "vaultfs",
            "mount",
            url,
            str(mountpoint),
            "--user",
            EDITOR,
            "--foreground",
            "-o",
            f"cache_dir={cache_dir}",
        ],
        env=dict(os.environ, VAULTFS_PASSWORD=DEMO_PASSWORD),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0, result
    return result.stdout + result.stderr


def test_a_second_mount_of_one_cache_dir_is_refused_and_the_first_keeps_working(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    with MountProcess(fresh_vault.url, tmp_path / "first") as first:
        general = first.mountpoint / "General"
        handle = open(general / "draft note.txt", "wb")  # noqa: SIM115 - closed below
        handle.write(b"half written ")
        other = tmp_path / "second-mnt"
        other.mkdir()
        said = mount_refusal(fresh_vault.url, other, first.cache_dir)
        assert "in use" in said and str(first.mountpoint) in said
        assert not os.path.ismount(other)
        handle.write(b"and finished\n")
        handle.close()  # the first mount's new file is still whole: a new document
        doc = general / "draft note" / "draft note.txt"
        wait_until(doc.exists, timeout=20, what="the new document")
        assert doc.read_bytes() == b"half written and finished\n"
        assert first.status()["lost_and_found"] == []


def test_mounting_on_an_active_mount_point_or_a_non_empty_directory_is_refused(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    with MountProcess(fresh_vault.url, tmp_path / "first") as first:
        said = mount_refusal(fresh_vault.url, first.mountpoint, tmp_path / "other-cache")
        assert "already a mount point" in said
        assert first.status()["pid"] == first.pid  # still the one mount there
        # df and mount(8) name the vault the mount shows
        mounts = Path("/proc/mounts").read_text().splitlines()
        [line] = [m for m in mounts if m.split()[1] == str(first.mountpoint)]
        assert line.split()[0] == fresh_vault.url and line.split()[2] == "fuse.vaultfs"
    full = tmp_path / "full"
    full.mkdir()
    (full / "file").write_text("mine")
    said = mount_refusal(fresh_vault.url, full, tmp_path / "third-cache")
    assert "not empty" in said and (full / "file").read_text() == "mine"


def test_two_mounts_appending_at_once_lose_no_line(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """Admin and editor append to one document through two mounts at the same time:
    each append checks out, starts from the latest version, and checks in; a side
    that finds the document checked out by the other gets EBUSY and tries again."""
    with (
        MountProcess(fresh_vault.url, tmp_path / "a") as admin,
        MountProcess(fresh_vault.url, tmp_path / "b", user=EDITOR) as editor,
    ):
        failures: list[BaseException] = []

        def append_lines(mount: MountProcess, tag: str) -> None:
            try:
                for n in range(8):
                    line = f"{tag}{n}\n".encode()

                    def append(line: bytes = line) -> bool:
                        try:
                            with open(mount.mountpoint / CHECKLIST, "ab") as f:
                                f.write(line)
                        except OSError as exc:
                            if exc.errno == 16:  # EBUSY: the other side has it out
                                return False
                            raise
                        return True

                    wait_until(append, timeout=60, interval=0.05, what=f"append {tag}{n}")
            except BaseException as exc:
                failures.append(exc)

        threads = [
            threading.Thread(target=append_lines, args=(admin, "A")),
            threading.Thread(target=append_lines, args=(editor, "B")),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=180)
        assert not failures, failures
        assert not any(thread.is_alive() for thread in threads)
        # The last append's check-in follows its close: both sides' saves are in the
        # vault before the mounts stop.
        admin.settle()
        editor.settle()
    doc_id = next(
        int(d["document"]["id"])
        for d in api.get("/objects/documents", params={"limit": 100}).json()["documents"]
        if d["document"]["filename__v"] == "Release_Checklist.md"
    )
    latest = api.get(f"/objects/documents/{doc_id}/file").text
    for tag in "AB":
        for n in range(8):
            assert f"{tag}{n}\n" in latest, latest


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 20 MiB tmpfs for the cache directory."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "small"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m,mode=0700", "tmpfs", where], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", where], check=False)


def test_a_full_cache_disk_never_uploads_a_fragment(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path, small_disk: Path
) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(50 * 1024 * 1024))
    mount = MountProcess(fresh_vault.url, tmp_path / "m", cache_dir=small_disk / "cache")
    with mount:
        target = mount.mountpoint / CHECKLIST
        doc_id = int(os.getxattr(target.parent, "user.vault.id"))
        before = len(api.get(f"/objects/documents/{doc_id}").json()["versions"])
        result = subprocess.run(["cp", big, target], capture_output=True, text=True, timeout=120)
        assert result.returncode != 0
        assert "No space left" in result.stderr or "Input/output" in result.stderr
        subprocess.run(["rm", "-f", big], check=True)
        flush = subprocess.run(
            [sys.executable, "-m", "vaultfs", "flush", str(mount.mountpoint)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "everything written is in the vault" not in flush.stdout
        status = mount.status()
        assert status["pending_uploads"] == []
        [lost] = status["lost_and_found"]  # the fragment, kept, never a version
        assert lost["error"].startswith(("WRITE_FAILED", "UNKNOWN")), lost
        assert "write failed: No space left on device" in mount.log()
    after = api.get(f"/objects/documents/{doc_id}").json()
    assert len(after["versions"]) == before
    assert not after.get("lock")


def test_a_new_file_being_written_when_the_daemon_dies_is_kept(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    first = MountProcess(fresh_vault.url, tmp_path / "m").start()
    try:
        handle = open(first.mountpoint / "General" / "unfinished.txt", "wb")  # noqa: SIM115
        handle.write(b"words a user typed\n")
        handle.flush()
        assert first.proc is not None
        first.proc.kill()  # SIGKILL: the daemon never sees the close
        first.proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            handle.close()  # ENOTCONN
    finally:
        first.stop()
    with MountProcess(fresh_vault.url, tmp_path / "m") as second:
        [lost] = second.status()["lost_and_found"]
        assert lost["filename"] == "unfinished.txt" and lost["error"].startswith("DAEMON_STOPPED")
        kept = second.mountpoint / ".vaultfs" / "lost+found" / lost["file"]
        assert kept.read_bytes() == b"words a user typed\n"


def test_the_vault_away_at_a_save_takes_it_offline_and_fails_fast_at_mount(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    with MountProcess(fresh_vault.url, tmp_path / "m") as mount:
        path = mount.mountpoint / CHECKLIST
        before = path.read_bytes()  # in the content cache now
        fresh_vault.stop()
        try:
            # The deadline is the test's patience, not a measurement: without the
            # vault the check-out gives up within seconds, not minutes.
            result = subprocess.run(
                ["sh", "-c", 'echo offline >> "$1"', "sh", path],
                capture_output=True,
                text=True,
                timeout=20,
            )
            # The first write finds the vault away: the mount goes offline and takes
            # the save into its spool (docs/user-guide.md "Offline").
            assert result.returncode == 0, result.stderr
            assert mount.status()["vault"]["state"] == "offline"
            assert path.read_bytes() == before + b"offline\n"
            assert [e["state"] for e in mount.status()["pending_uploads"]] == ["pending"]
        finally:
            fresh_vault.start()
        wait_until(
            lambda: mount.status()["vault"]["state"] == "online", timeout=120, what="back online"
        )
        assert mount.settle(timeout=120)["lost_and_found"] == []
    (tmp_path / "x").mkdir()
    nobody = fresh_vault.url.rsplit(":", 1)[0] + ":9"  # the discard port: nothing listens
    said = mount_refusal(nobody, tmp_path / "x", tmp_path / "c")
    assert "cannot reach the vault" in said and "no index" in said


def test_a_field_set_while_the_vault_is_away_waits_and_reaches_it_once_back(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """setfattr with the vault stopped returns within seconds (the value is in the
    spool), getfattr shows it, and it reaches the vault when the vault is back."""
    with MountProcess(fresh_vault.url, tmp_path / "m") as mount:
        source = mount.mountpoint / CHECKLIST
        doc_id = int(os.getxattr(source, "user.vault.id"))
        # A field set while the vault is there: its field metadata is known from then on.
        os.setxattr(source, "user.vault.title__v", b"Before")
        fresh_vault.stop()
        try:
            # The deadline is the test's patience: a few seconds of tries, then queued.
            subprocess.run(
                ["setfattr", "-n", "user.vault.title__v", "-v", "Away", str(source)],
                check=True,
                timeout=30,
            )
            assert os.getxattr(source, "user.vault.title__v") == b"Away"
            [waiting] = mount.status()["pending_uploads"]
            assert (waiting["doc_id"], waiting["filename"]) == (doc_id, "user.vault.title__v")
        finally:
            fresh_vault.start()
        subprocess.run(
            [sys.executable, "-m", "vaultfs", "sync", str(source)], check=True, timeout=120
        )
        record = api.get(f"/objects/documents/{doc_id}").json()["document"]
        assert record["title__v"] == "Away"
        assert mount.status()["pending_uploads"] == [] and mount.status()["lost_and_found"] == []


def test_modes_tell_what_a_viewer_and_a_check_out_allow(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    with MountProcess(fresh_vault.url, tmp_path / "v", user=VIEWER) as viewer:
        general = viewer.mountpoint / "General"
        assert os.stat(general).st_mode & 0o222 == 0  # no new files here
        result = subprocess.run(
            ["cp", "/etc/hostname", general / "new.txt"], capture_output=True, text=True
        )
        assert result.returncode != 0 and "Permission denied" in result.stderr
        assert viewer.status()["lost_and_found"] == []  # refused at create, nothing kept
        source = viewer.mountpoint / CHECKLIST
        with pytest.raises(PermissionError), open(source, "ab", buffering=0) as f:
            f.write(b"not mine to write")  # the first write: the vault refuses the check-out
        assert os.stat(source).st_mode & 0o222 == 0  # and the mode says so from then on
    # A fast poll: the editor's check-out through the API must reach this mount.
    with MountProcess(fresh_vault.url, tmp_path / "a", options="poll_interval=1") as admin:
        source = admin.mountpoint / CHECKLIST
        assert os.stat(source).st_mode & 0o200
        doc_id = int(os.getxattr(source.parent, "user.vault.id"))
        with httpx.Client(
            base_url=fresh_vault.url + API,
            headers={"Authorization": login(fresh_vault.url, EDITOR)},
        ) as editor:
            editor.post(f"/objects/documents/{doc_id}/lock")
            try:
                wait_until(
                    lambda: os.stat(source).st_mode & 0o222 == 0,
                    timeout=20,
                    what="the checked-out document shown read-only",
                )
            finally:
                editor.delete(f"/objects/documents/{doc_id}/lock")
