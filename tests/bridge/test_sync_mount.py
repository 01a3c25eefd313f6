"""``vaultfs sync PATH`` on a real mount of a real vault: it returns once the vault has
every save under PATH, says per file why not (exit 1) otherwise, and costs nothing
for a path with nothing on its way. Also what the other commands now say: the status
lists files waiting for fields and lost+found by path, ``umount`` names a file a
program holds open, and the log names files by their path in the mount.

A proxy between mount and vault (``tests.faultproxy``) holds the draft upload, or
answers it 503, so a save can be caught on its way. The mounts poll at the default
interval: nothing here waits for a poll.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import login
from tests.faultproxy import FaultProxy
from tests.ops.conftest import run_vaultfs
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

API = "/api/v25.1"
CHECKLIST = "General/Release Checklist"
#: a classification whose new documents need study_number__c (the demo gives no default)
FINAL_PROTOCOL = "Clinical/Protocol/Final Protocol"
#: retries=0: a failed upload is recorded at once (the test does not wait out retries)
OPTIONS = "retries=0"


@pytest.fixture
def api(fresh_vault: VaultProcess) -> Iterator[httpx.Client]:
    headers = {"Authorization": login(fresh_vault.url)}
    with httpx.Client(base_url=fresh_vault.url + API, headers=headers, timeout=60) as client:
        yield client


@pytest.fixture
def proxy(fresh_vault: VaultProcess) -> Iterator[FaultProxy]:
    """A proxy to ``fresh_vault`` that answers every POST 503 while ``active``."""
    port = int(fresh_vault.url.rsplit(":", 1)[1])
    with FaultProxy(port, seed=1, share=1.0, faults=("503",), methods=("POST",)) as proxy:
        yield proxy


@pytest.fixture
def mount(proxy: FaultProxy, tmp_path: Path) -> Iterator[MountProcess]:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    process = MountProcess(proxy.url, tmp_path / "m", options=OPTIONS)
    try:
        yield process.start()
    finally:
        process.stop()


def source_file(directory: Path) -> Path:
    [source] = [p for p in directory.iterdir() if p.is_file()]
    return source


def vault_content(api: httpx.Client, doc_id: int) -> bytes:
    return api.get(f"/objects/documents/{doc_id}/file").content


def names(api: httpx.Client) -> list[str]:
    return [d["document"]["name__v"] for d in api.get("/objects/documents").json()["documents"]]


def sync(*args: str | Path, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return run_vaultfs("sync", *(str(a) for a in args), "--timeout", f"{timeout:g}")


@contextlib.contextmanager
def held_open(path: Path, mode: str, data: bytes) -> Iterator[None]:
    """A program of its own holds ``path`` open (``mode``: ``ab`` or ``wb``) with
    ``data`` written, until the block ends. Not this process: every process it starts
    would inherit the descriptor, and close it."""
    script = (
        "import sys\n"
        "f = open(sys.argv[1], sys.argv[2])\n"
        "f.write(sys.argv[3].encode()); f.flush()\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
        "f.close()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(path), mode, data.decode()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()  # the program closes the file and ends
        holder.wait(timeout=60)


def quietly_close(f: object) -> None:
    with contextlib.suppress(OSError):  # a check-in at close may report the outage
        f.close()  # type: ignore[attr-defined]


def test_sync_returns_once_the_vault_has_the_draft(
    mount: MountProcess, proxy: FaultProxy, api: httpx.Client, tmp_path: Path
) -> None:
    directory = mount.mountpoint / CHECKLIST
    doc_id = int(os.getxattr(directory, "user.vault.id"))
    local = tmp_path / "Release_Checklist.md"
    local.write_bytes(b"# checklist\n\n- synced\n" * 100)
    # The draft upload is held on its way to the vault.
    hold = proxy.hold("POST", f"/documents/{doc_id} HTTP")
    copy = threading.Thread(
        target=subprocess.run, args=(["cp", str(local), str(directory)],), daemon=True
    )
    copy.start()
    assert hold.holding.wait(timeout=30), "the draft upload never came"

    caught = sync(directory, timeout=2)
    assert caught.returncode == 1, caught.stderr
    assert str(directory / "Release_Checklist.md") in caught.stderr
    assert "not in the vault yet (uploading" in caught.stderr
    assert vault_content(api, doc_id) != local.read_bytes()

    hold.release()
    done = sync(directory)
    assert done.returncode == 0, done.stderr + mount.log()
    # The barrier held: the vault has the draft the moment sync returns.
    assert vault_content(api, doc_id) == local.read_bytes()
    assert not api.get(f"/objects/documents/{doc_id}/lock").json().get("lock")
    copy.join(timeout=30)


def test_sync_with_the_vault_refusing_names_the_file_and_its_error(
    mount: MountProcess, proxy: FaultProxy, api: httpx.Client
) -> None:
    directory = mount.mountpoint / CHECKLIST
    doc_id = int(os.getxattr(directory, "user.vault.id"))
    source = source_file(directory)
    added = b"\nadded while the vault refused\n"
    content = source.read_bytes() + added
    f = open(source, "ab")  # noqa: SIM115 - closed below, with the vault refusing
    f.write(added)
    f.flush()  # written (and checked out) while the vault answers
    proxy.active = True  # every POST (the draft upload) is answered 503 now
    quietly_close(f)
    # (the check-in's first try, refused, on a busy machine may take longer than the
    # sync's wait below: the error it names is there first)
    wait_until(
        lambda: any(p["last_error"] for p in mount.status()["pending_uploads"]),
        timeout=30,
        what="the refused check-in",
    )

    failed = sync(directory, timeout=3)
    assert failed.returncode == 1
    assert f"{source}: not in the vault yet" in failed.stderr
    assert "last error:" in failed.stderr and "503" in failed.stderr
    whole = sync(mount.mountpoint, timeout=1)
    assert whole.returncode == 1 and str(source) in whole.stderr

    # Nothing on its way under another document: at once, though the timeout is long.
    other = next(p for p in (mount.mountpoint / "General").iterdir() if p != directory)
    started = time.monotonic()
    assert sync(other, timeout=60).returncode == 0
    assert time.monotonic() - started < 10

    proxy.active = False
    done = sync(source)  # asks the daemon to try now: no waiting out the retry delay
    assert done.returncode == 0, done.stderr + mount.log()
    assert vault_content(api, doc_id) == content


def test_sync_reports_files_still_open_and_umount_names_them(
    mount: MountProcess, api: httpx.Client
) -> None:
    directory = mount.mountpoint / CHECKLIST
    doc_id = int(os.getxattr(directory, "user.vault.id"))
    source = source_file(directory)
    content = source.read_bytes() + b"\nstill open\n"
    new_file = mount.mountpoint / "General" / "Open Notes.txt"
    with held_open(source, "ab", b"\nstill open\n"), held_open(new_file, "wb", b"notes\n"):
        held = sync(mount.mountpoint / "General", timeout=1)
        assert held.returncode == 1
        assert f"{source}: open for writing by a program" in held.stderr
        assert f"{new_file}: a new file open for writing by a program" in held.stderr

        refused = run_vaultfs("umount", str(mount.mountpoint), "--timeout", "30")
        assert refused.returncode == 1
        assert f"{source} is open for writing by a program; close it first" in refused.stderr
        assert "once the vault is reachable" not in refused.stderr
        assert os.path.ismount(mount.mountpoint)
    done = sync(directory, mount.mountpoint / "General" / "Open Notes.txt")
    assert done.returncode == 0, done.stderr + mount.log()
    assert vault_content(api, doc_id) == content
    assert "Open Notes" in names(api)


def test_sync_and_status_show_a_new_file_waiting_for_fields(
    mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    folder = mount.mountpoint / FINAL_PROTOCOL
    local = tmp_path / "Study Plan.txt"
    local.write_bytes(b"waits for its study number")
    subprocess.run(["cp", str(local), str(folder)], check=True)
    waiting = folder / "Study Plan.txt"

    started = time.monotonic()
    result = sync(folder, timeout=60)
    assert result.returncode == 1
    assert time.monotonic() - started < 10  # waiting does not bring a field: at once
    assert f"{waiting}: a new file waiting for fields: study_number__c" in result.stderr

    table = run_vaultfs("status", str(mount.mountpoint)).stdout
    assert "waiting fields   1" in table
    assert f"{FINAL_PROTOCOL}/Study Plan.txt" in table and "study_number__c" in table
    [entry] = mount.status()["pending_new_documents"]
    assert entry["path"] == f"{FINAL_PROTOCOL}/Study Plan.txt"

    subprocess.run(
        ["setfattr", "-n", "user.vault.study_number__c", "-v", "S-1", str(waiting)], check=True
    )
    assert sync(folder).returncode == 0
    assert "Study Plan" in names(api)


def test_lost_and_found_counts_for_a_sync_of_the_whole_mount(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    """A new file being written when the daemon died is kept in lost+found at the next
    start: the vault does not have it, so a sync of the mount says so until the user
    removes it there; a sync of one document does not carry it."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    first = MountProcess(fresh_vault.url, tmp_path / "m").start()
    try:
        f = open(first.mountpoint / "General" / "Half Written.txt", "wb")  # noqa: SIM115
        f.write(b"half of it")
        f.flush()
        assert first.proc is not None
        first.proc.kill()
        first.proc.wait(timeout=10)
        quietly_close(f)
    finally:
        first.stop()
    with MountProcess(fresh_vault.url, tmp_path / "m") as second:
        [lost] = second.status()["lost_and_found"]
        assert lost["mount_path"] == f".vaultfs/lost+found/{lost['file']}"
        table = run_vaultfs("status", str(second.mountpoint)).stdout
        assert f".vaultfs/lost+found/{lost['file']}" in table and "DAEMON_STOPPED" in table

        whole = sync(second.mountpoint, timeout=1)
        assert whole.returncode == 1
        assert f".vaultfs/lost+found/{lost['file']}" in whole.stderr
        assert sync(second.mountpoint / CHECKLIST, timeout=1).returncode == 0

        (second.mountpoint / lost["mount_path"]).unlink()  # rescued: acknowledged
        assert sync(second.mountpoint, timeout=1).returncode == 0


def test_log_lines_name_files_by_their_path_in_the_mount(mount: MountProcess) -> None:
    directory = mount.mountpoint / CHECKLIST
    with pytest.raises(OSError):
        os.setxattr(directory, "user.vault.id", b"7")  # a system field: EPERM
    with pytest.raises(OSError):
        os.setxattr(source_file(directory), "user.vault.id", b"7")
    wait_until(lambda: "setxattr(" in mount.log(), what="the refusal's log line")
    log = mount.log_path.read_text()
    assert f"setxattr({CHECKLIST}, user.vault.id) failed" in log
    assert f"setxattr({CHECKLIST}/{source_file(directory).name}, user.vault.id) failed" in log
    assert "Kind." not in log  # no node key in any line


def test_sync_of_a_path_on_no_mount_is_a_usage_error(tmp_path: Path) -> None:
    result = sync(tmp_path, timeout=1)
    assert result.returncode == 2 and "not on a vaultfs mount" in result.stderr
