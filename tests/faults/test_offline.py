"""Offline: a mount whose vault cannot be reached works from what it keeps, and every
save made meanwhile reaches the vault once it is back (docs/user-guide.md "Offline").

Real mounts of a real vault process that is stopped and started again (connections
refused), or behind a proxy that resets every connection while ``active`` (the vault
runs on, so another client can change it meanwhile). Each test ends with what the
vault has, counted: one version per save, one document per new file, nothing lost.
"""

from __future__ import annotations

import errno
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import upload_draft
from tests.faultproxy import FaultProxy
from tests.ops.conftest import run_vaultfs
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

CHECKLIST = "General/Release Checklist/Release_Checklist.md"
LINE = b"written offline\n"
#: a read of content that is not kept fails at once offline; one that waited for the
#: client's retries (six, up to 30 s apart) would take far longer than this
AT_ONCE = 10.0


def versions(api: httpx.Client, doc_id: int) -> int:
    return len(api.get(f"/objects/documents/{doc_id}").json()["versions"])


def latest(api: httpx.Client, doc_id: int) -> bytes:
    return api.get(f"/objects/documents/{doc_id}/file").content


def lock_of(api: httpx.Client, doc_id: int) -> object:
    return api.get(f"/objects/documents/{doc_id}/lock").json().get("lock")


def named(api: httpx.Client, name: str) -> list[dict[str, object]]:
    body = api.get("/objects/documents", params={"limit": 200}).json()
    return [d["document"] for d in body["documents"] if d["document"]["name__v"] == name]


def state(mount: MountProcess) -> str:
    return str(mount.status()["vault"]["state"])


def unread_source(mount: MountProcess) -> Path:
    """The source file of a document of General this test never read."""
    general = mount.mountpoint / "General"
    directory = next(
        p for p in sorted(general.iterdir()) if p.is_dir() and p.name != "Release Checklist"
    )
    return directory / os.getxattr(directory, "user.vault.filename__v").decode()


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120)


def back_online(mount: MountProcess) -> dict[str, object]:
    """Wait until the mount found the vault back and took in what waited; its status."""
    wait_until(lambda: state(mount) == "online", timeout=120, what="the vault found back")
    return mount.settle(timeout=120)


@dataclass
class Kept:
    """A mount started offline, and how many versions the checklist had before."""

    mount: MountProcess
    doc_id: int
    versions: int


@pytest.fixture
def kept(fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path) -> Iterator[Kept]:
    """A mount's cache that keeps the vault's index and the checklist's content (read
    once online), then the mount again with the vault stopped: started offline."""
    cache = tmp_path / "cache"
    with MountProcess(fresh_vault.url, tmp_path / "m", cache_dir=cache) as online:
        checklist = online.mountpoint / CHECKLIST
        checklist.read_bytes()
        doc_id = int(os.getxattr(checklist.parent, "user.vault.id"))
    count = versions(api, doc_id)
    fresh_vault.stop()
    offline = MountProcess(fresh_vault.url, tmp_path / "m", cache_dir=cache)
    try:
        yield Kept(offline.start(), doc_id, count)
    finally:
        offline.stop()


def test_a_mount_starts_offline_from_its_kept_index_and_what_waited_goes_in_once(
    fresh_vault: VaultProcess, api: httpx.Client, kept: Kept, tmp_path: Path
) -> None:
    mount, doc_id = kept.mount, kept.doc_id
    status = mount.status()
    assert status["vault"]["state"] == "offline" and status["index"]["ready"]
    assert "offline since" in run_vaultfs("status", str(mount.mountpoint)).stdout
    checklist = mount.mountpoint / CHECKLIST
    before = checklist.read_bytes()  # kept: read at the cache's speed
    assert "Release Checklist" in os.listdir(mount.mountpoint / "General")
    assert os.getxattr(checklist.parent, "user.vault.name__v") == b"Release Checklist"
    # Content that is not kept fails at once, with an error a program can report.
    started = time.monotonic()
    with pytest.raises(OSError) as refused:
        unread_source(mount).read_bytes()
    assert refused.value.errno == errno.EHOSTUNREACH
    assert time.monotonic() - started < AT_ONCE
    # A save, a field and a new document, each taken as online.
    with open(checklist, "ab") as f:
        f.write(LINE)
    assert checklist.read_bytes() == before + LINE  # at once, from the spool
    os.setxattr(checklist.parent, "user.vault.title__v", b"Packed for the trip")
    local = tmp_path / "Trip Report.txt"
    local.write_bytes(b"written on the train\n")
    assert run("cp", local, mount.mountpoint / "General").returncode == 0
    # What cannot be applied later safely is refused at once, with the same error.
    renamed = run("mv", checklist.parent, mount.mountpoint / "General" / "Renamed offline")
    assert renamed.returncode != 0 and "No route to host" in renamed.stderr
    status = mount.status()
    assert [e["doc_id"] for e in status["pending_uploads"] if e["doc_id"] == doc_id]
    assert [c["state"] for c in status["checked_out"]] == ["owed"]
    # (The kernel sends the new file's release after cp's close: waited for.)
    wait_until(
        lambda: [f["state"] for f in mount.status()["new_files"]] == ["waiting for the vault"],
        timeout=30,
        what="the new file waiting for the vault",
    )

    fresh_vault.start()
    calls = mount.status()["api_calls"]
    status = back_online(mount)
    assert status["lost_and_found"] == [] and status["checked_out"] == []
    assert versions(api, doc_id) == kept.versions + 1  # one version for the one save
    assert latest(api, doc_id) == before + LINE
    assert not lock_of(api, doc_id)
    record = api.get(f"/objects/documents/{doc_id}").json()["document"]
    assert record["title__v"] == "Packed for the trip"
    [trip] = named(api, "Trip Report")
    assert latest(api, int(str(trip["id"]))) == b"written on the train\n"
    assert (mount.mountpoint / "General" / "Trip Report" / "Trip Report.txt").exists()
    # The catch-up and the three jobs, in calls: a handful each.
    assert int(status["api_calls"]) - int(calls) <= 30


@pytest.mark.parametrize("end", ["kill -9", "vaultfs umount"])
def test_a_mount_ended_offline_with_a_save_waiting_loses_nothing(
    fresh_vault: VaultProcess, api: httpx.Client, kept: Kept, tmp_path: Path, end: str
) -> None:
    """The daemon killed, or unmounted, while offline with a save in the spool (an
    unmount says it keeps it, and does not wait); the next start is offline too, and
    takes the save up; the vault back, it goes in once."""
    first, doc_id = kept.mount, kept.doc_id
    checklist = first.mountpoint / CHECKLIST
    before = checklist.read_bytes()
    with open(checklist, "ab") as f:
        f.write(LINE)
    wait_until(
        lambda: [e["state"] for e in first.status()["pending_uploads"]] == ["pending"],
        timeout=30,
        what="the save closed, in the spool",
    )
    assert first.proc is not None
    if end == "kill -9":
        first.proc.kill()
        first.proc.wait(timeout=10)
    else:
        said = run_vaultfs("umount", str(first.mountpoint))
        assert said.returncode == 0 and "kept in the spool" in said.stderr, said.stderr
        first.proc.wait(timeout=30)
    first.stop()  # the dead mount unmounted (the ended one: nothing to do)
    with MountProcess(fresh_vault.url, tmp_path / "m", cache_dir=first.cache_dir) as again:
        status = again.status()
        assert status["vault"]["state"] == "offline"
        assert [e["doc_id"] for e in status["pending_uploads"]] == [doc_id]
        assert [c["state"] for c in status["checked_out"]] == ["owed"]
        assert (again.mountpoint / CHECKLIST).read_bytes() == before + LINE
        fresh_vault.start()
        status = back_online(again)
    assert status["lost_and_found"] == []
    assert versions(api, doc_id) == kept.versions + 1
    assert latest(api, doc_id) == before + LINE
    assert not lock_of(api, doc_id)


@pytest.fixture
def proxy(fresh_vault: VaultProcess) -> Iterator[FaultProxy]:
    """A proxy to ``fresh_vault`` that resets every connection while ``active``: the
    vault cannot be reached from the mount, and runs on for the test's own client."""
    port = int(fresh_vault.url.rsplit(":", 1)[1])
    with FaultProxy(port, seed=1, share=1.0, faults=("reset_before",)) as proxy:
        yield proxy


def test_going_offline_mid_session_and_a_conflict_at_reconnect(
    api: httpx.Client, proxy: FaultProxy, tmp_path: Path
) -> None:
    """The network drops while mounted: the mount goes offline without a remount, a
    save is taken, and the vault's document changes meanwhile (another client). Back
    online, the save is never replaced silently nor lost: lost+found, as the conflict
    rule says; the other client's version stays the latest."""
    # retries=0: the drop is found at the first call that fails (else after six tries)
    with MountProcess(proxy.url, tmp_path / "m", options="retries=0") as mount:
        checklist = mount.mountpoint / CHECKLIST
        doc_id = int(os.getxattr(checklist.parent, "user.vault.id"))
        before = checklist.read_bytes()
        proxy.active = True
        with open(checklist, "ab") as f:  # the check-out finds the vault gone
            f.write(LINE)
        assert state(mount) == "offline"
        assert checklist.read_bytes() == before + LINE
        upload_draft(api, doc_id, "Release_Checklist.md", b"another client's version\n")
        proxy.active = False
        status = back_online(mount)
        [lost] = status["lost_and_found"]
        assert "CHECK_IN_CONFLICT" in str(lost["error"]), lost
        kept_as = mount.mountpoint / str(lost["mount_path"])
        assert kept_as.read_bytes() == before + LINE
    assert latest(api, doc_id) == b"another client's version\n"
    assert not lock_of(api, doc_id)


def test_a_check_out_for_the_trip_outlives_the_mount_and_its_saves_go_in_under_it(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """``vaultfs checkout`` before going offline: the vault's check-out, held across
    an unmount and an offline start, so the save made offline checks in under it (no
    conflict possible); ``vaultfs checkin`` ends it."""
    cache = tmp_path / "cache"
    with MountProcess(fresh_vault.url, tmp_path / "m", cache_dir=cache) as online:
        checklist = online.mountpoint / CHECKLIST
        before = checklist.read_bytes()
        doc_id = int(os.getxattr(checklist.parent, "user.vault.id"))
        took = run_vaultfs("checkout", str(checklist.parent))
        assert took.returncode == 0, took.stderr
        [held] = online.status()["checked_out"]
        assert held["why"] == ["check-out for offline work"] and held["state"] == "held"
    count = versions(api, doc_id)
    assert lock_of(api, doc_id)  # the unmount left it checked out: it is the trip's
    fresh_vault.stop()
    with MountProcess(fresh_vault.url, tmp_path / "m", cache_dir=cache) as offline:
        assert state(offline) == "offline"
        [held] = offline.status()["checked_out"]
        assert held["why"] == ["check-out for offline work"] and held["state"] == "held"
        other = unread_source(offline).parent
        refused = run_vaultfs("checkout", str(other))
        assert refused.returncode == 1 and "cannot be reached" in refused.stderr
        checklist = offline.mountpoint / CHECKLIST
        with open(checklist, "ab") as f:
            f.write(LINE)
        fresh_vault.start()
        status = back_online(offline)
        assert status["lost_and_found"] == []
        assert versions(api, doc_id) == count + 1
        assert latest(api, doc_id) == before + LINE
        assert lock_of(api, doc_id)  # still the trip's
        ended = run_vaultfs("checkin", str(checklist.parent))
        assert ended.returncode == 0, ended.stderr
        assert offline.status()["checked_out"] == []
    assert not lock_of(api, doc_id)
