"""Renditions and attachments in, through a real mount of a real vault: ``cp``, ``cat >``
and ``rsync`` into ``renditions/``, ``versions/M.m/renditions/`` and ``attachments/``
reach the vault byte for byte, ``rm`` deletes (with ``allow_delete``), an unknown
rendition type is refused, and a refused or interrupted upload loses nothing."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import VIEWER
from tests.faultproxy import FaultProxy
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

PDF = b"%PDF-1.4\n% a rendition written through the mount\n" + bytes(range(256)) * 40
OTHER_PDF = b"%PDF-1.4\n% another one\n" + bytes(range(255, -1, -1)) * 30


@pytest.fixture(scope="module")
def vault(module_vault: VaultProcess) -> VaultProcess:
    return module_vault


@pytest.fixture(scope="module")
def deleting(
    vault: VaultProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MountProcess]:
    """A second mount of the module's vault, with ``allow_delete``."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    with MountProcess(
        vault.url, tmp_path_factory.mktemp("deleting"), options="allow_delete"
    ) as process:
        yield process


# --- helpers ----------------------------------------------------------------------------

_taken: set[int] = set()


def document(api: httpx.Client, *, rendition: bool) -> int:
    """A demo document no other test of the module uses, with or without a viewable
    rendition on its latest version."""
    for doc_id in range(1, 40):
        if doc_id in _taken:
            continue
        body = api.get(f"/objects/documents/{doc_id}").json()
        if body.get("responseStatus") != "SUCCESS":
            continue
        if ("viewable_rendition__v" in (body.get("renditions") or {})) == rendition:
            _taken.add(doc_id)
            return doc_id
    raise AssertionError("no such demo document left")


def run(*argv: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=120)
    if check:
        assert result.returncode == 0, f"{argv}: {result.returncode}\n{result.stderr}"
    return result


def rendition_bytes(api: httpx.Client, doc_id: int, rtype: str, version: str = "") -> bytes:
    where = f"/versions/{version.replace('.', '/')}" if version else ""
    response = api.get(f"/objects/documents/{doc_id}{where}/renditions/{rtype}")
    assert response.status_code == 200, response.text
    return response.content


def renditions(api: httpx.Client, doc_id: int) -> dict[str, Any]:
    return dict(api.get(f"/objects/documents/{doc_id}/renditions").json().get("renditions") or {})


def attachments(api: httpx.Client, doc_id: int) -> dict[str, dict[str, Any]]:
    data = api.get(f"/objects/documents/{doc_id}/attachments").json().get("data") or []
    return {a["filename__v"]: a for a in data}


def attachment_bytes(api: httpx.Client, doc_id: int, attachment_id: int) -> bytes:
    return api.get(f"/objects/documents/{doc_id}/attachments/{attachment_id}/file").content


def write_file(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --- renditions -------------------------------------------------------------------------


def test_cp_adds_a_rendition_to_a_document_without_one(
    mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    doc_id = document(api, rendition=False)
    target = mount.document_dir(doc_id) / "renditions" / "viewable_rendition__v.pdf"
    assert not target.exists()
    run("cp", write_file(tmp_path, "x.pdf", PDF), target)
    mount.settle()  # the upload follows the last close; then the tree shows it at once
    assert rendition_bytes(api, doc_id, "viewable_rendition__v") == PDF
    assert "viewable_rendition__v.pdf" in os.listdir(target.parent)
    assert target.read_bytes() == PDF
    assert mount.status()["pending_uploads"] == []


def test_cp_replaces_an_existing_rendition(
    mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    doc_id = document(api, rendition=True)
    target = mount.document_dir(doc_id) / "renditions" / "viewable_rendition__v.pdf"
    # Read until cached by the mount and kept by the kernel (its later read-only opens
    # share one handle): the replacement must not be served from either.
    before = [target.read_bytes() for _ in range(3)][-1]
    assert before != OTHER_PDF
    run("cp", write_file(tmp_path, "y.pdf", OTHER_PDF), target)
    mount.settle()
    assert rendition_bytes(api, doc_id, "viewable_rendition__v") == OTHER_PDF
    assert target.read_bytes() == OTHER_PDF
    assert os.stat(target).st_size == len(OTHER_PDF)


def test_cat_into_a_versions_renditions(mount: MountProcess, api: httpx.Client) -> None:
    doc_id = document(api, rendition=True)
    versions = api.get(f"/objects/documents/{doc_id}/versions").json()["versions"]
    version = versions[0]["number"]
    target = (
        mount.document_dir(doc_id) / "versions" / version / "renditions" / "custom_rendition__c.pdf"
    )
    subprocess.run(["sh", "-c", 'cat > "$1"', "sh", str(target)], input=PDF, check=True)
    mount.settle()
    assert rendition_bytes(api, doc_id, "custom_rendition__c", version) == PDF
    if len(versions) > 1:  # that version's, not the latest's
        assert "custom_rendition__c" not in renditions(api, doc_id)
    assert target.read_bytes() == PDF
    assert "custom_rendition__c.pdf" in os.listdir(target.parent)


def test_an_unknown_rendition_type_is_refused(
    mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    doc_id = document(api, rendition=True)
    folder = mount.document_dir(doc_id) / "renditions"
    with pytest.raises(OSError) as refused:
        (folder / "no_such_rendition__c.pdf").write_bytes(PDF)
    assert refused.value.errno == errno.EINVAL
    assert "no_such_rendition__c" not in renditions(api, doc_id)
    assert "no_such_rendition__c.pdf" not in os.listdir(folder)
    wait_until(lambda: "rendition refused" in mount.log(), timeout=10, what="the log line")


# --- attachments ------------------------------------------------------------------------


def test_cp_adds_an_attachment_then_versions_it_and_same_content_adds_nothing(
    mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    doc_id = document(api, rendition=True)
    folder = mount.document_dir(doc_id) / "attachments"
    first = write_file(tmp_path, "report data.csv", b"a,b\n1,2\n")
    run("cp", first, folder)
    mount.settle()
    found = attachments(api, doc_id)["report data.csv"]
    assert int(found["version__v"]) == 1
    assert attachment_bytes(api, doc_id, found["id"]) == b"a,b\n1,2\n"
    for _ in range(3):  # kept by the kernel: the new version must not be served from it
        assert (folder / "report data.csv").read_bytes() == b"a,b\n1,2\n"

    first.write_bytes(b"a,b\n1,2\n3,4\n")
    run("cp", first, folder)
    mount.settle()
    found = attachments(api, doc_id)["report data.csv"]
    assert int(found["version__v"]) == 2
    assert attachment_bytes(api, doc_id, found["id"]) == b"a,b\n1,2\n3,4\n"
    assert (folder / "report data.csv").read_bytes() == b"a,b\n1,2\n3,4\n"

    run("cp", first, folder)  # the same content again: no new version
    mount.settle()
    assert int(attachments(api, doc_id)["report data.csv"]["version__v"]) == 2
    with open(folder / "report data.csv", "r+b"):  # opened for writing, nothing written
        pass
    mount.settle()
    assert int(attachments(api, doc_id)["report data.csv"]["version__v"]) == 2
    assert len([n for n in attachments(api, doc_id) if n == "report data.csv"]) == 1


@pytest.mark.skipif(shutil.which("rsync") is None, reason="needs rsync")
def test_rsync_into_attachments_uses_a_temporary_name(
    mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    doc_id = document(api, rendition=True)
    folder = mount.document_dir(doc_id) / "attachments"
    source = write_file(tmp_path, "synced.bin", os.urandom(300_000))
    run("rsync", source, f"{folder}/")
    mount.settle()
    found = attachments(api, doc_id)
    assert set(found) >= {"synced.bin"}
    assert not [n for n in found if n.startswith(".")]  # rsync's temporary name stayed local
    assert attachment_bytes(api, doc_id, found["synced.bin"]["id"]) == source.read_bytes()
    assert (folder / "synced.bin").read_bytes() == source.read_bytes()


# --- deleting ---------------------------------------------------------------------------


def test_rm_of_an_attachment_and_a_rendition(
    mount: MountProcess, deleting: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    doc_id = document(api, rendition=True)
    run(
        "cp",
        write_file(tmp_path, "gone.txt", b"to be deleted\n"),
        mount.document_dir(doc_id) / "attachments",
    )
    mount.settle()
    assert "gone.txt" in attachments(api, doc_id)
    # without allow_delete: refused, nothing deleted
    kept = run("rm", mount.document_dir(doc_id) / "attachments" / "gone.txt", check=False)
    assert kept.returncode != 0 and "not permitted" in kept.stderr
    assert "gone.txt" in attachments(api, doc_id)

    deleting.refresh()  # the other mount's attachment, shown now
    here = deleting.document_dir(doc_id)
    assert (here / "attachments" / "gone.txt").exists()
    run("rm", here / "attachments" / "gone.txt")
    assert "gone.txt" not in attachments(api, doc_id)
    assert not (here / "attachments" / "gone.txt").exists()
    run("rm", here / "renditions" / "viewable_rendition__v.pdf")
    assert "viewable_rendition__v" not in renditions(api, doc_id)
    assert "viewable_rendition__v.pdf" not in os.listdir(here / "renditions")


# --- faults -----------------------------------------------------------------------------


def test_a_refused_upload_keeps_the_content_in_lost_and_found(
    vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """The viewer may read but not add attachments: the upload after the last close is
    refused, and nothing is lost: the content is in lost+found."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    doc_id = document(api, rendition=True)
    with MountProcess(vault.url, tmp_path / "viewer", user=VIEWER) as viewer:
        lost_and_found = viewer.mountpoint / ".vaultfs" / "lost+found"
        # Listed empty first: a kernel that keeps listings must not keep this one.
        assert os.listdir(lost_and_found) == []
        target = viewer.document_dir(doc_id) / "attachments" / "refused.txt"
        target.write_bytes(b"the viewer's notes\n")  # close(): safe in the spool
        viewer.settle()
        lost = viewer.status()["lost_and_found"]
        assert [item["filename"] for item in lost] == ["refused.txt"]
        assert "INSUFFICIENT_ACCESS" in lost[0]["error"]
        assert os.listdir(lost_and_found) == [lost[0]["file"]]
        kept = lost_and_found / lost[0]["file"]
        assert kept.read_bytes() == b"the viewer's notes\n"
        assert viewer.status()["pending_uploads"] == []
    assert "refused.txt" not in attachments(api, doc_id)


def test_a_failed_upload_is_kept_and_sent_once_later(
    vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """The vault away (503) after the last close: the content waits in the spool, and
    the worker sends it once the vault is back."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    doc_id = document(api, rendition=True)
    port = int(vault.url.rsplit(":", 1)[1])
    with (
        FaultProxy(port, seed=1, share=1.0, faults=("503",), methods=("POST",)) as proxy,
        MountProcess(proxy.url, tmp_path / "m") as process,
    ):
        target = process.document_dir(doc_id) / "attachments" / "later.txt"
        proxy.active = True
        target.write_bytes(b"sent when the vault is back\n")  # close(): safe in the spool
        wait_until(
            lambda: any(p["last_error"] for p in process.status()["pending_uploads"]),
            timeout=30,
            what="the failed upload",
        )
        pending = process.status()["pending_uploads"]
        assert [p["filename"] for p in pending] == ["attachments/later.txt"]
        assert "later.txt" not in attachments(api, doc_id)
        proxy.active = False
        wait_until(lambda: not process.status()["pending_uploads"], timeout=60, what="the retry")
        assert process.status()["lost_and_found"] == []
    found = attachments(api, doc_id)["later.txt"]
    assert int(found["version__v"]) == 1
    assert attachment_bytes(api, doc_id, found["id"]) == b"sent when the vault is back\n"


@pytest.mark.parametrize("after_vault", [False, True], ids=["not-arrived", "arrived"])
def test_a_kill_between_close_and_upload_sends_it_exactly_once(
    vault: VaultProcess, api: httpx.Client, tmp_path: Path, after_vault: bool
) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    doc_id = document(api, rendition=True)
    port = int(vault.url.rsplit(":", 1)[1])
    data = f"written before the crash ({after_vault})\n".encode()
    with FaultProxy(port, seed=1, share=0.0) as proxy:
        first = MountProcess(proxy.url, tmp_path / "m").start()
        try:
            target = first.document_dir(doc_id) / "attachments" / "crash.txt"
            hold = proxy.hold(
                "POST", f"/documents/{doc_id}/attachments HTTP", after_vault=after_vault
            )
            writer = threading.Thread(target=_write_quietly, args=(target, data), daemon=True)
            writer.start()
            assert hold.holding.wait(timeout=30), "the upload never came"
            assert first.proc is not None
            first.proc.kill()
            first.proc.wait(timeout=10)
            hold.release()
            writer.join(timeout=30)
        finally:
            first.stop()
        with MountProcess(proxy.url, tmp_path / "m") as second:
            wait_until(lambda: not second.status()["pending_uploads"], timeout=60, what="replay")
            assert second.status()["lost_and_found"] == []
            assert "found uploading; sending it again" in second.log_path.read_text()
    found = attachments(api, doc_id)["crash.txt"]
    assert int(found["version__v"]) == 1
    assert attachment_bytes(api, doc_id, found["id"]) == data


def _write_quietly(path: Path, data: bytes) -> None:
    with contextlib.suppress(OSError):  # the daemon was killed under it
        path.write_bytes(data)


def test_a_kill_while_writing_keeps_the_content_in_lost_and_found(
    vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """Killed with the file still open: what was written is not sent (it may be half a
    file) but kept, and the next start says why."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    doc_id = document(api, rendition=True)
    first = MountProcess(vault.url, tmp_path / "m").start()
    try:
        target = first.document_dir(doc_id) / "renditions" / "imported_rendition__c.pdf"
        f = open(target, "wb")  # noqa: SIM115 - abandoned with the daemon
        f.write(PDF)
        f.flush()
        assert first.proc is not None
        first.proc.kill()
        first.proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            f.close()
    finally:
        first.stop()
    with MountProcess(vault.url, tmp_path / "m") as second:
        lost = second.status()["lost_and_found"]
        assert [item["filename"] for item in lost] == ["imported_rendition__c.pdf"]
        assert "DAEMON_STOPPED" in lost[0]["error"]
        assert (second.mountpoint / ".vaultfs" / "lost+found" / lost[0]["file"]).read_bytes() == PDF
        assert second.status()["pending_uploads"] == []
    assert "imported_rendition__c" not in renditions(api, doc_id)
