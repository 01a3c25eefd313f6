"""Real mounts driven by real programs: ls, find, stat, cat, grep, rsync, tar, getfattr."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD, login
from vaultfs.bridge.commands.control import unmount
from vaultfs.testing.mount_process import MountProcess, calls_by_endpoint
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

API = "/api/v25.1"


def run(*argv: str | Path, cwd: Path | None = None) -> str:
    result = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"{argv}: {result.returncode}\n{result.stderr}"
    return result.stdout


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def documents(url: str) -> list[dict[str, Any]]:
    session = login(url)
    r = httpx.get(f"{url}{API}/objects/documents", headers={"Authorization": session})
    return [d["document"] for d in r.json()["documents"]]


def latest_files(mount: MountProcess) -> dict[str, Path]:
    """md5 of the vault -> path of each document's latest source file in the mount."""
    found: dict[str, Path] = {}
    for path in mount.mountpoint.rglob("*"):
        rel = path.relative_to(mount.mountpoint).parts
        if "versions" in rel or "renditions" in rel or "attachments" in rel or path.is_dir():
            continue
        md5 = os.getxattr(path, "user.vault.md5checksum__v").decode()
        found[md5] = path
    return found


def test_every_latest_file_reads_back_with_the_vaults_checksum(
    shared_mount: MountProcess, vault_server: VaultProcess
) -> None:
    docs = [d for d in documents(vault_server.url) if d.get("md5checksum__v")]
    assert docs
    files = latest_files(shared_mount)
    for doc in docs:
        path = files[doc["md5checksum__v"]]
        md5 = run("md5sum", path).split()[0]
        assert md5 == doc["md5checksum__v"], path
        # Once read, the size is exact.
        assert path.stat().st_size == len(path.read_bytes())


def test_ls_find_stat_and_warm_listing_costs_no_call(shared_mount: MountProcess) -> None:
    run("ls", "-lR", shared_mount.mountpoint)
    before = calls_by_endpoint(shared_mount.status())
    listing = run("ls", "-lR", shared_mount.mountpoint)
    after = calls_by_endpoint(shared_mount.status())
    assert after == before, {k: after[k] - before.get(k, 0) for k in after}
    assert "versions" in listing and "renditions" in listing
    found = run("find", shared_mount.mountpoint, "-type", "f").splitlines()
    assert any("/versions/0.1/" in f for f in found)
    assert not any(".vaultfs" in f for f in found)
    out = run("stat", "-c", "%F %a", found[0])
    assert out.split()[-1] in ("444", "644")


def test_grep_finds_content(shared_mount: MountProcess, vault_server: VaultProcess) -> None:
    files = latest_files(shared_mount)
    path = next(p for p in files.values() if p.suffix in (".txt", ".md", ".csv"))
    word = path.read_text().split()[0]
    out = run("grep", "-rlF", word, shared_mount.mountpoint)
    assert str(path) in out.splitlines()


def test_rsync_twice_moves_nothing_the_second_time_and_tar_works(
    shared_mount: MountProcess, tmp_path: Path
) -> None:
    out = tmp_path / "copy"
    run("rsync", "-a", f"{shared_mount.mountpoint}/", f"{out}/")
    second = run("rsync", "-a", "--itemize-changes", f"{shared_mount.mountpoint}/", f"{out}/")
    assert second.strip() == ""
    run("diff", "-r", shared_mount.mountpoint, out)
    run("tar", "cf", tmp_path / "all.tar", "-C", shared_mount.mountpoint, ".")
    assert (tmp_path / "all.tar").stat().st_size > 0


def test_getfattr_shows_fields_and_status_is_json(shared_mount: MountProcess) -> None:
    doc_dir = next(shared_mount.mountpoint.rglob("versions")).parent
    dump = run("getfattr", "-d", doc_dir)
    assert "user.vault.id=" in dump and "user.vault.name__v=" in dump
    status = shared_mount.status()
    assert status["vault_url"] == shared_mount.url and status["user"] == ADMIN
    assert status["index"]["documents"] > 0
    assert DEMO_PASSWORD not in json.dumps(status)


def _api(url: str) -> httpx.Client:
    return httpx.Client(base_url=url + API, headers={"Authorization": login(url)})


def test_changes_and_deletions_appear_after_a_poll(
    own_mount: MountProcess, fresh_vault: VaultProcess
) -> None:
    doc = documents(fresh_vault.url)[0]
    with _api(fresh_vault.url) as api:
        r = api.put(f"/objects/documents/{doc['id']}", data={"name__v": "Renamed by the API"})
        assert r.json()["responseStatus"] == "SUCCESS", r.text
        own_mount.refresh()
        wait_until(
            lambda: list(own_mount.mountpoint.rglob("Renamed by the API")),
            timeout=20,
            what="the renamed document",
        )
        r = api.delete(f"/objects/documents/{doc['id']}")
        assert r.json()["responseStatus"] == "SUCCESS", r.text
        own_mount.refresh()
        wait_until(
            lambda: not list(own_mount.mountpoint.rglob("Renamed by the API")),
            timeout=20,
            what="the deleted document to disappear",
        )


def test_hostile_names_show_up_safely(own_mount: MountProcess, fresh_vault: VaultProcess) -> None:
    doc = documents(fresh_vault.url)[0]
    content = b"hostile content\n"
    with _api(fresh_vault.url) as api:
        for name in ("..", "../../escape", "x" * 100):
            r = api.post(
                "/objects/documents",
                data={
                    "name__v": name,
                    "type__v": doc["type__v"],
                    "subtype__v": doc.get("subtype__v") or "",
                    "classification__v": doc.get("classification__v") or "",
                    "lifecycle__v": doc["lifecycle__v"],
                },
                files={"file": ("../../evil.txt", content)},
            )
            assert r.json()["responseStatus"] == "SUCCESS", r.text

    def found() -> list[Path]:
        return [
            p
            for p in own_mount.mountpoint.rglob("*evil.txt")
            if "versions" not in p.parts and p.read_bytes() == content
        ]

    own_mount.refresh()
    paths = wait_until(lambda: len(found()) == 3 and found(), timeout=20, what="hostile docs")
    for path in paths:
        assert path.resolve().is_relative_to(own_mount.mountpoint)
        assert "/" not in path.name and path.name.endswith("evil.txt")
    names = {p.parent.name for p in paths}
    assert names == {"%2E%2E", "..%2F..%2Fescape", "x" * 100}


def test_daemon_mount_and_umount(fresh_vault: VaultProcess, tmp_path: Path) -> None:
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    base = [sys.executable, "-m", "vaultfs"]
    env = dict(os.environ, VAULTFS_PASSWORD="wrong password")
    argv = [*base, "mount", fresh_vault.url, str(mountpoint), "--user", ADMIN]
    argv += ["-o", f"cache_dir={tmp_path / 'cache'}"]
    try:
        bad = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert bad.returncode != 0 and "password" in bad.stderr
        assert not os.path.ismount(mountpoint)
        env["VAULTFS_PASSWORD"] = DEMO_PASSWORD
        good = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert good.returncode == 0, good.stderr
        assert os.path.ismount(mountpoint)  # up as soon as the parent returned
        pid = json.loads((mountpoint / ".vaultfs" / "status").read_text())["pid"]
        done = subprocess.run([*base, "umount", str(mountpoint)], timeout=90)
        assert done.returncode == 0
        assert not os.path.ismount(mountpoint)
        assert not running(pid)
    finally:
        if os.path.ismount(mountpoint):
            unmount(mountpoint)


def test_appending_checks_in_a_new_draft(
    own_mount: MountProcess, fresh_vault: VaultProcess
) -> None:
    doc = next(d for d in documents(fresh_vault.url) if d.get("filename__v"))
    files = latest_files(own_mount)
    path = files[doc["md5checksum__v"]]
    original = path.read_bytes()
    subprocess.run(f"echo 'one more line' >> '{path}'", shell=True, check=True)
    expected = original + b"one more line\n"
    # At once on this mount: the kernel sends the release (the check-in) after close
    # returned, and a read that starts after the close sees the save all the same.
    assert path.read_bytes() == expected
    # In the vault once the check-in is done: `vaultfs sync` is the barrier a script
    # uses (CI once read the vault before the release had reached the mount).
    run(sys.executable, "-m", "vaultfs", "sync", path)
    after = next(d for d in documents(fresh_vault.url) if d["id"] == doc["id"])
    assert after["md5checksum__v"] == hashlib.md5(expected).hexdigest()
    assert path.read_bytes() == expected
    old = f"{doc['major_version_number__v']}.{doc['minor_version_number__v']}"
    assert (path.parent / "versions" / old / path.name).read_bytes() == original
