"""Writing through a real mount with real programs: every save ends as exactly one new
draft holding exactly the bytes written, with the lock released."""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EDITOR, admin_client, login
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

API = "/api/v25.1"


# --- fixtures and helpers ---------------------------------------------------------------


@pytest.fixture(scope="module")
def vault(module_vault: VaultProcess) -> VaultProcess:
    return module_vault


def run(*argv: str | Path, cwd: Path | None = None, check: bool = True) -> str:
    result = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    if check:
        assert result.returncode == 0, f"{argv}: {result.returncode}\n{result.stderr}"
    return result.stdout + result.stderr


def record(api: httpx.Client, doc_id: int) -> dict[str, Any]:
    body = api.get(f"/objects/documents/{doc_id}").json()
    assert body["responseStatus"] == "SUCCESS", body
    return body


def version_count(api: httpx.Client, doc_id: int) -> int:
    return len(record(api, doc_id)["versions"])


def latest_bytes(api: httpx.Client, doc_id: int) -> bytes:
    return api.get(f"/objects/documents/{doc_id}/file").content


def lock_holder(api: httpx.Client, doc_id: int) -> Any:
    return (api.get(f"/objects/documents/{doc_id}/lock").json().get("lock") or {}).get(
        "locked_by__v"
    )


def source_file(mount: MountProcess, doc_id: int) -> Path:
    """The latest source file of document ``doc_id`` in the mount."""
    for doc_dir in mount.mountpoint.glob("*/**/"):
        is_doc = (doc_dir / "versions").is_dir()
        if is_doc and os.getxattr(doc_dir, "user.vault.id") == str(doc_id).encode():
            filename = os.getxattr(doc_dir, "user.vault.filename__v").decode()
            return doc_dir / filename
    raise AssertionError(f"document {doc_id} not in the mount")


class Save:
    """Before/after of one save of a document: exactly one new draft, these bytes."""

    def __init__(self, mount: MountProcess, api: httpx.Client, doc_id: int) -> None:
        self.api, self.doc_id, self.mount = api, doc_id, mount
        self.path = source_file(mount, doc_id)
        self.original = self.path.read_bytes()
        self.versions = version_count(api, doc_id)

    def check(self, expected: bytes) -> None:
        self.mount.settle()  # the check-in follows the program's last close
        assert version_count(self.api, self.doc_id) == self.versions + 1
        assert hashlib.md5(latest_bytes(self.api, self.doc_id)).hexdigest() == (
            hashlib.md5(expected).hexdigest()
        )
        assert record(self.api, self.doc_id)["document"]["filename__v"] == self.path.name
        assert lock_holder(self.api, self.doc_id) is None
        assert self.path.read_bytes() == expected


# --- save patterns ----------------------------------------------------------------------


def test_cp_over_the_source_file(mount: MountProcess, api: httpx.Client, tmp_path: Path) -> None:
    save = Save(mount, api, 2)
    local = tmp_path / "new.txt"
    local.write_bytes(b"copied in\n" * 1000)
    run("cp", local, save.path)
    save.check(local.read_bytes())


def test_shell_redirections(mount: MountProcess, api: httpx.Client) -> None:
    save = Save(mount, api, 3)
    run("sh", "-c", f"echo 'replaced' > '{save.path}'")
    save.check(b"replaced\n")
    save = Save(mount, api, 3)
    run("sh", "-c", f"echo 'appended' >> '{save.path}'")
    save.check(b"replaced\nappended\n")


def test_sed_in_place(mount: MountProcess, api: httpx.Client) -> None:
    save = Save(mount, api, 8)
    run("sed", "-i", "s/^/> /", save.path)
    expected = b"".join(b"> " + line for line in save.original.splitlines(keepends=True))
    save.check(expected)
    assert not [p for p in save.path.parent.iterdir() if p.name.startswith("sed")]


@pytest.mark.parametrize(("doc_id", "mode"), [(11, "yes"), (17, "no")])
def test_vim_writes_in_place_and_by_rename(
    mount: MountProcess, api: httpx.Client, doc_id: int, mode: str
) -> None:
    save = Save(mount, api, doc_id)
    run(
        "vim",
        "-es",
        "-u",
        "NONE",
        "-c",
        f"set backupskip= backupcopy={mode} writebackup swapfile",
        "-c",
        "1s/^/vim was here: /",
        "-c",
        "wq",
        save.path,
    )
    save.check(b"vim was here: " + save.original)
    assert sorted(p.name for p in save.path.parent.iterdir()) == sorted(
        [save.path.name, "attachments", "relationships", "renditions", "versions"]
    )


def test_rsync_into_the_mount(mount: MountProcess, api: httpx.Client, tmp_path: Path) -> None:
    save = Save(mount, api, 20)
    local = tmp_path / save.path.name
    local.write_bytes(b"synced\n" * 300)
    run("rsync", local, save.path)
    save.check(local.read_bytes())


def test_dd_truncate_and_seek_write(mount: MountProcess, api: httpx.Client) -> None:
    save = Save(mount, api, 4)
    subprocess.run(
        ["dd", f"of={save.path}", "bs=1", "seek=2", "conv=notrunc", "status=none"],
        input=b"XY",
        check=True,
    )
    save.check(save.original[:2] + b"XY" + save.original[4:])
    save = Save(mount, api, 4)
    run("truncate", "-s", "5", save.path)
    save.check(save.original[:5])
    save = Save(mount, api, 4)
    with open(save.path, "r+b") as f:
        f.seek(3)
        f.write(b"!")
        f.seek(0, os.SEEK_END)
        f.write(b"end")
    save.check(save.original[:3] + b"!" + save.original[4:] + b"end")


def test_a_document_locked_by_another_user_is_busy_but_readable(
    mount: MountProcess, api: httpx.Client, vault: VaultProcess
) -> None:
    path = source_file(mount, 9)
    editor = {"Authorization": login(vault.url, EDITOR)}
    r = httpx.post(f"{vault.url}{API}/objects/documents/9/lock", headers=editor)
    assert r.json()["responseStatus"] == "SUCCESS", r.text
    try:
        versions = version_count(api, 9)
        # The index does not know of the lock yet: the open succeeds (no call), the
        # first write is refused, and nothing is written or spooled.
        with pytest.raises(OSError) as info, open(path, "ab", buffering=0) as f:
            f.write(b"never written")
        assert info.value.errno == errno.EBUSY
        assert mount.settle()["pending_uploads"] == []
        assert path.read_bytes() == latest_bytes(api, 9)
        assert version_count(api, 9) == versions
        assert lock_holder(api, 9) is not None  # still held by the editor
    finally:
        httpx.delete(f"{vault.url}{API}/objects/documents/9/lock", headers=editor)


# --- new documents ----------------------------------------------------------------------


def test_cp_into_a_type_folder_creates_a_document(
    mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    local = tmp_path / "Fresh Report.txt"
    local.write_bytes(b"a new document\n")
    run("cp", local, mount.mountpoint / "General")
    mount.settle()  # the create follows the last close
    created = mount.mountpoint / "General" / "Fresh Report" / "Fresh Report.txt"
    assert created.read_bytes() == local.read_bytes()  # known at once, no poll needed
    doc_id = int(os.getxattr(created, "user.vault.id"))
    assert latest_bytes(api, doc_id) == local.read_bytes()
    assert record(api, doc_id)["document"]["type__v"] == "General"

    folder = mount.mountpoint / "General" / "Minutes 7"
    folder.mkdir()
    run("cp", local, folder / "minutes.txt")
    mount.settle()
    assert int(os.getxattr(folder, "user.vault.id")) != doc_id
    assert (folder / "minutes.txt").read_bytes() == local.read_bytes()


def test_a_new_document_waits_in_place_for_its_required_fields(
    mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """The demo's Final Protocol classification requires study_number__c (no default):
    the new file stays where it was written until setfattr supplies the field."""
    folder = mount.mountpoint / "Clinical" / "Protocol" / "Final Protocol"
    count = len(api.get("/objects/documents").json()["documents"])
    local = tmp_path / "Study Draft.txt"
    local.write_bytes(b"do not lose me")
    run("cp", local, folder)  # close succeeds: the file waits for its field
    mount.settle()
    pending = folder / "Study Draft.txt"
    assert pending.read_bytes() == b"do not lose me"
    assert os.getxattr(pending, "user.vault.missing_fields") == b'["study_number__c"]'
    [waiting] = mount.status()["pending_new_documents"]
    assert waiting["missing"] == ["study_number__c"]
    assert "study_number__c" in mount.log()
    assert len(api.get("/objects/documents").json()["documents"]) == count
    run("setfattr", "-n", "user.vault.study_number__c", "-v", "ABC-123", pending)
    doc = folder / "Study Draft" / "Study Draft.txt"
    wait_until(doc.exists, timeout=20, what="the document")
    assert doc.read_bytes() == b"do not lose me"
    assert os.getxattr(doc.parent, "user.vault.study_number__c") == b"ABC-123"
    assert len(api.get("/objects/documents").json()["documents"]) == count + 1
    assert mount.status()["pending_new_documents"] == []
    assert mount.status()["lost_and_found"] == []
    # A default on the folder serves every new file below it.
    run("setfattr", "-n", "user.vault.default.study_number__c", "-v", "XYZ-9", folder)
    (tmp_path / "Second.txt").write_bytes(b"second")
    run("cp", tmp_path / "Second.txt", folder)
    second = folder / "Second" / "Second.txt"
    wait_until(second.exists, timeout=20, what="the second document")
    assert os.getxattr(second.parent, "user.vault.study_number__c") == b"XYZ-9"


def test_a_field_set_right_after_the_close_is_kept_a_hundred_times(
    own_mount: MountProcess, fresh_vault: VaultProcess
) -> None:
    """A script writes a new file and sets the field it lacks at once, the two commands
    back to back, a hundred times: however each setfattr falls against the create the
    close started, every file becomes exactly one document with its field, and nothing
    waits. What a new file lacks can be asked from the moment it exists."""
    folder = own_mount.mountpoint / "Clinical" / "Protocol" / "Final Protocol"
    script = """
    for i in $(seq 1 100); do
      printf 'brand new %s\\n' "$i" > "new $i.txt"
      setfattr -n user.vault.study_number__c -v "S-$i" "new $i.txt"
    done
    """
    creates_before = own_mount.status()["api_calls_by_endpoint"].get("POST /objects/documents", 0)
    run("bash", "-ec", script, cwd=folder)
    asked = run(
        "bash",
        "-ec",
        """printf 'asked\\n' > "asked.txt"
        getfattr --only-values -n user.vault.missing_fields asked.txt""",
        cwd=folder,
    )
    # Before, during or after the first try of its create: the field is named.
    assert asked == '["study_number__c"]', asked
    run("setfattr", "-n", "user.vault.study_number__c", "-v", "S-101", folder / "asked.txt")
    own_mount.settle(timeout=120)
    wait_until(
        lambda: not own_mount.status()["pending_new_documents"], timeout=60, what="no waiting"
    )
    with admin_client(fresh_vault.url) as api:
        made: dict[str, list[dict[str, Any]]] = {}
        start = 0
        while True:
            page = api.get("/objects/documents", params={"start": start, "limit": 200}).json()
            for item in page["documents"]:
                made.setdefault(item["document"]["name__v"], []).append(item["document"])
            start += 200
            if start >= page["size"]:
                break
    assert made["asked"][0]["study_number__c"] == "S-101"
    for i in range(1, 101):
        [doc] = made[f"new {i}"]
        assert doc["study_number__c"] == f"S-{i}"
    status = own_mount.status()
    assert status["pending_new_documents"] == []
    assert status["lost_and_found"] == []
    calls = status["api_calls_by_endpoint"]
    # Exactly one create per file: a file that waited is created when its field comes.
    assert calls["POST /objects/documents"] - creates_before == 101, calls


# --- fields and deletion -------------------------------------------------------------------


def test_fields_through_setfattr(mount: MountProcess, api: httpx.Client) -> None:
    path = source_file(mount, 13)
    run("setfattr", "-n", "user.vault.title__v", "-v", "Set from the mount", path)
    assert record(api, 13)["document"]["title__v"] == "Set from the mount"
    assert "Set from the mount" in run("getfattr", "-n", "user.vault.title__v", path)
    run("setfattr", "-x", "user.vault.title__v", path.parent)
    assert record(api, 13)["document"]["title__v"] is None
    denied = run("setfattr", "-n", "user.vault.md5checksum__v", "-v", "0", path, check=False)
    assert "Operation not permitted" in denied
    unknown = run("setfattr", "-n", "user.vault.nothing__c", "-v", "0", path, check=False)
    assert "Operation not supported" in unknown


def test_deleting_is_off_without_the_option(mount: MountProcess, api: httpx.Client) -> None:
    path = source_file(mount, 12)
    out = run("rm", "-rf", path.parent, check=False)
    assert "Operation not permitted" in out
    assert version_count(api, 12) >= 1


def test_rm_of_a_version_and_rm_r_of_a_document(
    vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    deleting = MountProcess(vault.url, tmp_path, options="allow_delete")
    try:
        deleting.start()
        path = source_file(deleting, 7)  # Travel Policy: versions 0.1, 0.2, 1.0, 1.1
        versions = version_count(api, 7)
        run("rm", path.parent / "versions" / "0.2" / path.name)
        assert version_count(api, 7) == versions - 1
        assert not (path.parent / "versions" / "0.2").exists()
        run("rm", "-r", path.parent)
        assert api.get("/objects/documents/7").json()["responseStatus"] == "FAILURE"
        assert not path.parent.exists()
    finally:
        deleting.stop()


# --- faults ------------------------------------------------------------------------------


def test_vault_down_at_close_then_back_and_a_killed_daemon(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    # Few client retries, so that the close gives up on the outage quickly.
    options = "retries=1"
    first = MountProcess(fresh_vault.url, tmp_path / "one", options=options).start()
    spool = first.cache_dir / "spool"
    try:
        path = source_file(first, 2)
        with httpx.Client(
            base_url=fresh_vault.url + API, headers={"Authorization": login(fresh_vault.url)}
        ) as api:
            versions = version_count(api, 2)
        # Close while the vault is down: the bytes stay in the spool, the check-in
        # after the close fails and is kept for the worker.
        f = open(path, "ab")  # noqa: SIM115 - closed below, with the vault down
        f.write(b"written offline\n")
        f.flush()
        expected = path.read_bytes()
        fresh_vault.stop()
        f.close()  # durable in the spool: close() succeeds
        assert (spool / "2.data").read_bytes() == expected
        wait_until(lambda: first.status()["pending_uploads"][0]["last_error"], timeout=30,
                   what="the failed check-in")  # fmt: skip
        [pending] = first.status()["pending_uploads"]
        assert pending["doc_id"] == 2 and pending["attempts"] >= 1 and pending["last_error"]
        # The daemon dies before the vault is back; a new mount checks the bytes in.
        assert first.proc is not None
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=10)
        first.stop()
        fresh_vault.start()
        second = MountProcess(fresh_vault.url, tmp_path / "one", options=options).start()
        try:
            with httpx.Client(
                base_url=fresh_vault.url + API, headers={"Authorization": login(fresh_vault.url)}
            ) as api:
                wait_until(lambda: version_count(api, 2) == versions + 1, timeout=30,
                           what="the draft from the spool")  # fmt: skip
                assert latest_bytes(api, 2) == expected
                wait_until(lambda: lock_holder(api, 2) is None, timeout=10, what="the unlock")
                wait_until(lambda: not second.status()["pending_uploads"], timeout=10,
                           what="an empty spool")  # fmt: skip
                assert version_count(api, 2) == versions + 1  # nothing uploaded twice
        finally:
            second.stop()
    finally:
        first.stop()
