"""Relationships as symbolic links on a real mount: the demo's links, ``ln -s`` and
``rm`` seen through the API, refusals as errnos, other clients' changes after a poll,
and a cold walk that asks for no document's relationships one by one."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import VIEWER
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}
CLINICAL = {
    "type__v": "Clinical",
    "subtype__v": "Protocol",
    "classification__v": "Amendment",
    "lifecycle__v": "General Lifecycle",
    "study_number__c": "S-REL",
}
#: what the mount counts per-version relationship listings under
PER_VERSION = "GET /objects/documents/{id}/versions/{major}/{minor}/relationships"
ALL = "GET /objects/documents/relationships"


def run(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def ok(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert body["responseStatus"] == "SUCCESS", body
    return body


def new_doc(api: httpx.Client, name: str, fields: dict[str, str] = GENERAL) -> int:
    body = ok(
        api.post(
            "/objects/documents",
            data={**fields, "name__v": name},
            files={"file": ("r.txt", b"relationship test\n")},
        )
    )
    return int(body["id"])


def relationships(api: httpx.Client, doc_id: int) -> list[dict[str, Any]]:
    """The relationships from the document's first version (0.1)."""
    body = ok(api.get(f"/objects/documents/{doc_id}/versions/0/1/relationships"))
    return [
        r["relationship"]
        for r in body["relationships"]
        if r["relationship"]["source_doc_id__v"] == doc_id
    ]


def doc_dir(mount: MountProcess, name: str) -> Path:
    """The directory of the (only) document called ``name``, made through the API: the
    mount shows it after a refresh (found with a deadline)."""
    mount.refresh()

    def find() -> Path | None:
        for folder in mount.mountpoint.rglob(name):
            # not a view's link to it (My Documents/<name>): its own directory
            if (folder / "versions").is_dir() and not folder.is_symlink():
                return folder
        return None

    found: Path = wait_until(find, timeout=30, what=f"document {name!r} in the mount")
    return found


def symlink_errno(target: str, link: Path) -> int:
    with pytest.raises(OSError) as raised:
        os.symlink(target, link)
    return raised.value.errno or 0


# --- reading --------------------------------------------------------------------------


def test_demo_relationships_are_links_to_the_targets(mount: MountProcess) -> None:
    checklist = doc_dir(mount, "Release Checklist")
    # Listed: the types the document has relationships of; every other type the
    # metadata allows for General is there by name (for ln -s), not listed.
    assert os.listdir(checklist / "relationships") == ["References"]
    for unused in [
        "Based On",
        "CrossLink (latest)",
        "CrossLink (static)",
        "CrossLink (steady state)",
        "Original Source",
    ]:
        assert (checklist / "relationships" / unused).is_dir()
        assert os.listdir(checklist / "relationships" / unused) == []
    assert not (checklist / "relationships" / "No Such Type").exists()
    link = checklist / "relationships" / "References" / "Q3 Results %2F Forecast"
    assert link.is_symlink()
    assert os.readlink(link) == "../../../Q3 Results %2F Forecast"
    assert os.lstat(link).st_size == len(os.readlink(link).encode())
    target = doc_dir(mount, "Q3 Results %2F Forecast")
    assert os.path.realpath(link) == str(target)
    assert "versions" in os.listdir(link)  # ls through the link lands in the document
    listing = run("ls", "-l", link.parent).stdout
    assert "Q3 Results %2F Forecast -> ../../../Q3 Results %2F Forecast" in listing


def test_a_relationship_to_a_version_points_into_versions(mount: MountProcess) -> None:
    amendment = doc_dir(mount, "Protocol Amendment 1")
    study = doc_dir(mount, "Study ABC-123 Protocol")
    link = amendment / "relationships" / "Based On" / "Study ABC-123 Protocol"
    text = os.readlink(link)
    latest = sorted(os.listdir(study / "versions"), key=lambda v: tuple(map(int, v.split("."))))
    assert text == os.path.relpath(study / "versions" / latest[-1], link.parent)
    assert os.path.realpath(link) == str(study / "versions" / latest[-1])


# --- ln -s and rm -----------------------------------------------------------------------


def test_ln_s_creates_and_rm_deletes(mount: MountProcess, api: httpx.Client) -> None:
    source, target = new_doc(api, "Rel Source A"), new_doc(api, "Rel Target A")
    here = doc_dir(mount, "Rel Source A")
    doc_dir(mount, "Rel Target A")
    references = here / "relationships" / "References"
    result = run("ln", "-s", "../../../Rel Target A", f"{references}/")
    assert result.returncode == 0, result.stderr
    made = relationships(api, source)
    assert [(r["target_doc_id__v"], r["relationship_type__v"]) for r in made] == [
        (target, "references__vs")
    ]
    assert "target_major_version__v" not in made[0]
    link = references / "Rel Target A"
    assert os.readlink(link) == "../../../Rel Target A"
    assert os.path.realpath(link) == str(here.parent / "Rel Target A")
    assert abs(os.lstat(link).st_mtime - time.time()) < 3600  # made now, not in 1970
    # The same again: it exists.
    assert symlink_errno("../../../Rel Target A", references / "again") == errno.EEXIST
    assert len(relationships(api, source)) == 1
    result = run("rm", link)
    assert result.returncode == 0, result.stderr
    assert relationships(api, source) == []
    assert not os.path.lexists(link)
    assert os.listdir(references) == []


def test_single_use_and_wrong_target_type_are_refused(
    mount: MountProcess, api: httpx.Client
) -> None:
    source = new_doc(api, "Rel Source B")
    new_doc(api, "Rel Target B1")
    new_doc(api, "Rel Target B2")
    here = doc_dir(mount, "Rel Source B")
    doc_dir(mount, "Rel Target B2")
    original = here / "relationships" / "Original Source"
    os.symlink("../../../Rel Target B1", original / "Rel Target B1")
    assert symlink_errno("../../../Rel Target B2", original / "Rel Target B2") == errno.EEXIST
    # Based On points at Clinical documents only: the vault refuses a General one.
    based_on = here / "relationships" / "Based On"
    assert symlink_errno("../../../Rel Target B2", based_on / "x") == errno.EINVAL
    # Paths that leave the mount or name no document's directory.
    assert symlink_errno("../../../../../../../../etc", based_on / "x") == errno.EINVAL
    assert symlink_errno("../../..", based_on / "x") == errno.EINVAL
    assert symlink_errno("../../../Nothing Here", based_on / "x") == errno.EINVAL
    assert symlink_errno("/etc/passwd", based_on / "x") == errno.EINVAL
    made = relationships(api, source)
    assert [r["relationship_type__v"] for r in made] == ["original_source__v"]
    assert "refused" in mount.log()


def test_version_specific_links(mount: MountProcess, api: httpx.Client) -> None:
    source = new_doc(api, "Rel Source C")
    clinical = new_doc(api, "Rel Clinical C", CLINICAL)
    ok(api.post(f"/objects/documents/{clinical}", data={"createDraft": "latestContent"}))
    here = doc_dir(mount, "Rel Source C")
    study = wait_until(
        lambda: (d := doc_dir(mount, "Rel Clinical C")) and (d / "versions" / "0.2").is_dir() and d,
        what="the clinical document's second version",
    )
    based_on = here / "relationships" / "Based On"
    # Pinned to the version the link names (an absolute path below the mount works too).
    os.symlink(str(study / "versions" / "0.1"), based_on / "first")
    made = relationships(api, source)
    assert [(r["target_major_version__v"], r["target_minor_version__v"]) for r in made] == [(0, 1)]
    link = based_on / "Rel Clinical C"
    assert os.path.realpath(link) == str(study / "versions" / "0.1")
    # A link to the document: a version-specific type takes its latest version.
    os.symlink(os.path.relpath(study, based_on), based_on / "latest")
    versions = sorted(
        (r["target_major_version__v"], r["target_minor_version__v"])
        for r in relationships(api, source)
    )
    assert versions == [(0, 1), (0, 2)]
    assert sorted(os.readlink(based_on / n).rsplit("/", 1)[-1] for n in os.listdir(based_on)) == [
        "0.1",
        "0.2",
    ]


def test_changes_by_another_client_show_after_a_poll(
    mount: MountProcess, api: httpx.Client
) -> None:
    source, target = new_doc(api, "Rel Source D"), new_doc(api, "Rel Target D")
    references = doc_dir(mount, "Rel Source D") / "relationships" / "References"
    assert os.listdir(references) == []
    form = {"target_doc_id__v": str(target), "relationship_type__v": "references__vs"}
    rel_id = ok(api.post(f"/objects/documents/{source}/versions/0/1/relationships", data=form))[
        "id"
    ]
    mount.refresh()
    wait_until(lambda: os.listdir(references) == ["Rel Target D"], what="the new link")
    ok(api.delete(f"/objects/documents/{source}/versions/0/1/relationships/{rel_id}"))
    mount.refresh()
    # The kernel is told to forget the name without waiting for it: poll for both.
    wait_until(
        lambda: os.listdir(references) == [] and not os.path.lexists(references / "Rel Target D"),
        what="the link to go",
    )


# --- costs and read-only ----------------------------------------------------------------


@pytest.fixture
def own_mount(module_vault: VaultProcess, tmp_path: Path, request: Any) -> Iterator[MountProcess]:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    options = getattr(request, "param", "")
    with MountProcess(module_vault.url, tmp_path, options=options) as process:
        yield process


def test_a_cold_find_reads_relationships_in_a_few_calls(own_mount: MountProcess) -> None:
    found = run("find", own_mount.mountpoint).stdout.splitlines()
    links = [f for f in found if "/relationships/" in f and os.path.islink(f)]
    assert any(f.endswith("/References/Q3 Results %2F Forecast") for f in links)
    documents = sum(1 for f in found if f.endswith("/relationships"))
    assert documents >= 20
    calls = own_mount.status()["api_calls_by_endpoint"]
    assert calls.get(PER_VERSION, 0) == 0
    assert 1 <= calls[ALL] <= 3


@pytest.mark.parametrize("own_mount", ["ro"], indirect=True)
def test_a_read_only_mount_refuses_links(own_mount: MountProcess) -> None:
    checklist = doc_dir(own_mount, "Release Checklist")
    references = checklist / "relationships" / "References"
    assert symlink_errno("../../../Meeting Notes", references / "x") == errno.EROFS
    with pytest.raises(OSError) as raised:
        os.unlink(references / "Q3 Results %2F Forecast")
    assert raised.value.errno == errno.EROFS


def test_a_relationship_stays_with_the_document_across_versions(
    mount: MountProcess, api: httpx.Client
) -> None:
    source = new_doc(api, "Rel Source E")
    new_doc(api, "Rel Target E")
    here = doc_dir(mount, "Rel Source E")
    doc_dir(mount, "Rel Target E")
    references = here / "relationships" / "References"
    os.symlink("../../../Rel Target E", references / "Rel Target E")
    # A new version (the local vault does not copy relationships to it): References is
    # not source-version specific, so the link is still the document's.
    ok(api.post(f"/objects/documents/{source}", data={"createDraft": "latestContent"}))
    mount.refresh()
    wait_until(lambda: (here / "versions" / "0.2").is_dir(), what="the new version")
    assert os.listdir(references) == ["Rel Target E"]
    # rm deletes it where it lives (on 0.1).
    os.unlink(references / "Rel Target E")
    assert relationships(api, source) == []
    assert os.listdir(references) == []


def test_a_viewer_may_not_link(module_vault: VaultProcess, tmp_path: Path) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    with MountProcess(module_vault.url, tmp_path / "viewer", user=VIEWER) as viewer:
        checklist = doc_dir(viewer, "Release Checklist")
        references = checklist / "relationships" / "References"
        assert symlink_errno("../../../Meeting Notes", references / "x") == errno.EACCES
        with pytest.raises(OSError) as raised:
            os.unlink(references / "Q3 Results %2F Forecast")
        assert raised.value.errno == errno.EACCES
        assert os.path.islink(references / "Q3 Results %2F Forecast")
        assert "refused" in viewer.log()
