"""The mount as a desktop sees it, on a real mount: the inotify events a file
manager's open window receives (``inotifywait``), the calls opening a folder costs,
GIO's trash, and what GNOME's ``.hidden`` lists."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.bridge.desktop import Watcher
from tests.conftest import login
from vaultfs.testing.mount_process import (
    MountProcess,
    calls_by_endpoint,
    calls_since,
    can_mount,
)
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

API = "/api/v25.1"
GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


def _api(vault: VaultProcess) -> httpx.Client:
    return httpx.Client(base_url=vault.url + API, headers={"Authorization": login(vault.url)})


def _documents_in(folder: Path) -> dict[str, int]:
    """Document directories of ``folder``: name -> document id."""
    return {
        entry.name: int(os.getxattr(entry, "user.vault.id"))
        for entry in folder.iterdir()
        if entry.is_dir() and (entry / "versions").is_dir()
    }


def test_a_pasted_file_is_deleted_and_its_folder_created_for_its_watchers(
    own_mount: MountProcess, tmp_path: Path
) -> None:
    general = own_mount.mountpoint / "General"
    local = tmp_path / "DesktopPaste.txt"
    local.write_bytes(b"pasted from the desktop\n")
    before = set(os.listdir(general))
    with Watcher(general) as folder_watcher:
        # The file stays open while a watch is put on it (the document is made at the
        # last release), as a window showing it holds a watch on it.
        with open(general / "DesktopPaste.txt", "wb") as pasted:
            pasted.write(local.read_bytes())
            file_watcher = Watcher(general / "DesktopPaste.txt")
        with file_watcher:
            own_mount.settle()
            # The daemon's delete notification: the kernel raises IN_DELETE_SELF to the
            # watchers of the file once it became the document folder.
            file_watcher.wait_for("DELETE_SELF", "")
            # The daemon's events: the folder's watchers see the file go and the
            # document folder appear (a window shows the truth without a refresh).
            folder_watcher.wait_for("DELETE", "DesktopPaste.txt")
            folder_watcher.wait_for("CREATE", "DesktopPaste")
        # The create and the write the kernel raised itself, in the folder.
        assert folder_watcher.seen("CREATE", "DesktopPaste.txt")
        assert folder_watcher.seen("CLOSE_WRITE", "DesktopPaste.txt")
        assert folder_watcher.seen("ISDIR", "DesktopPaste")
        assert not folder_watcher.seen("ISDIR", "DesktopPaste.txt")  # a file went
    names = os.listdir(general)
    assert "DesktopPaste" in names and "DesktopPaste.txt" not in names
    # The events' calls made and deleted nothing: one new document, nothing beside it.
    assert sorted(set(names) - before) == ["DesktopPaste"], names
    assert sorted(set(before) - set(names)) == [], names
    log = own_mount.log_path.read_text()
    assert log.count("created document") == 1 and " deleted " not in log, log
    assert (general / "DesktopPaste" / "DesktopPaste.txt").read_bytes() == local.read_bytes()


def test_another_clients_create_delete_and_rename_reach_the_folders_watchers(
    own_mount: MountProcess, fresh_vault: VaultProcess
) -> None:
    general = own_mount.mountpoint / "General"
    documents = _documents_in(general)  # a window lists the folder: the kernel holds names
    assert len(documents) >= 3, documents
    (deleted_name, deleted_id), (renamed_name, renamed_id), (changed_name, changed_id) = sorted(
        documents.items()
    )[:3]
    # A shell works in one document folder: a change of its fields by another client
    # must not take its working directory away.
    shell = subprocess.Popen(
        ["sh", "-c", "read line; pwd; ls versions"],
        cwd=general / changed_name,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # A window showing the folder watches it, and one showing each document folder.
        with (
            Watcher(general) as folder_watcher,
            Watcher(general / deleted_name) as deleted_watcher,
            Watcher(general / renamed_name) as renamed_watcher,
            _api(fresh_vault) as api,
        ):
            r = api.delete(f"/objects/documents/{deleted_id}")
            assert r.json()["responseStatus"] == "SUCCESS", r.text
            r = api.put(f"/objects/documents/{renamed_id}", data={"name__v": "Renamed on the web"})
            assert r.json()["responseStatus"] == "SUCCESS", r.text
            r = api.put(f"/objects/documents/{changed_id}", data={"title__v": "Changed on the web"})
            assert r.json()["responseStatus"] == "SUCCESS", r.text
            r = api.post(
                "/objects/documents",
                data={**GENERAL, "name__v": "Made on the web"},
                files={"file": ("web.txt", b"made on the web\n")},
            )
            assert r.json()["responseStatus"] == "SUCCESS", r.text
            own_mount.refresh()  # the mount's poll (every 30 s by default), now
            deleted_watcher.wait_for("DELETE_SELF", "")
            renamed_watcher.wait_for("DELETE_SELF", "")
            for event, name in [
                ("DELETE", deleted_name),
                ("DELETE", renamed_name),
                ("CREATE", "Renamed on the web"),
                ("CREATE", "Made on the web"),
            ]:
                folder_watcher.wait_for(event, name)
                assert folder_watcher.seen("ISDIR", name)
        # Nothing else was told: the document whose fields changed kept its name.
        assert not [e for e in folder_watcher.events if e[1] == changed_name], folder_watcher.events
        out, err = shell.communicate("go\n", timeout=30)
        assert shell.returncode == 0, err
        assert out.splitlines()[0] == str(general / changed_name)
    finally:
        if shell.poll() is None:
            shell.kill()
            shell.wait()
    listing = os.listdir(general)
    assert "Renamed on the web" in listing and "Made on the web" in listing
    assert deleted_name not in listing and renamed_name not in listing
    assert (general / "Renamed on the web" / "versions").is_dir()  # the renamed one works
    made = general / "Made on the web"
    assert (made / "web.txt").read_bytes() == b"made on the web\n"
    # The events' calls made and deleted nothing in the vault.
    with _api(fresh_vault) as api:
        r = api.get(f"/objects/documents/{renamed_id}")
        assert r.json()["document"]["name__v"] == "Renamed on the web", r.text


#: the index poll's calls: they happen whatever is opened
def _calls(mount: MountProcess) -> dict[str, int]:
    """The calls so far, background work under way or not (``quiet_calls`` waits)."""
    return calls_by_endpoint(mount.status())


def _visit(doc_dir: Path) -> bytes:
    """What a file manager does in a document folder: list it, count the items of its
    subfolders, read (thumbnail) its file."""
    for entry in doc_dir.iterdir():
        if entry.is_dir():
            os.listdir(entry)
    return (doc_dir / os.getxattr(doc_dir, "user.vault.filename__v").decode()).read_bytes()


def _download_calls(calls: dict[str, int]) -> int:
    return sum(n for endpoint, n in calls.items() if endpoint.endswith("/file"))


def test_opening_one_document_folder_costs_that_document_and_a_walk_reads_ahead(
    own_mount: MountProcess,
) -> None:
    general = own_mount.mountpoint / "General"
    listing = [
        general / name
        for name in os.listdir(general)  # the folder's listing order, which a walk follows
        if (general / name / "versions").is_dir()
        and os.getxattr(general / name, "user.vault.filename__v")
    ]
    assert len(listing) >= 5, listing
    # A path typed in the location bar: the folder listed once, one document opened,
    # the first one included (the one a walk starts with).
    for typed in (listing[2], listing[0]):
        os.listdir(general)
        before = own_mount.quiet_calls()
        assert _visit(typed)
        one = _calls(own_mount)
        # A read-ahead starts in the background: give it the time it takes to show.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert _calls(own_mount) == one, calls_since(one, _calls(own_mount))
            time.sleep(0.2)
        cost = calls_since(before, one)
        print("one document folder:", cost)
        # That document's record, file and relationships, and the type metadata a first
        # relationship listing reads once: each once at most, nothing for any other
        # document.
        assert _download_calls(cost) == 1, cost
        assert cost.get("GET /objects/documents/{id}") == 1, cost
        assert set(cost.values()) == {1}, cost
    # A walk (find, grep -r) lists the folder and visits its documents in order: from
    # its second document on, the next documents' files are read ahead.
    os.listdir(general)
    assert _visit(listing[0])
    before = own_mount.quiet_calls()
    assert _visit(listing[1])
    wait_until(
        lambda: _download_calls(calls_since(before, _calls(own_mount))) >= 3,
        timeout=20,
        what="the read-ahead of the next documents",
    )
    print("a walk's second document:", calls_since(before, _calls(own_mount)))


def _gio(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("gio") is None:
        pytest.skip("needs gio (Debian package libglib2.0-bin)")
    return subprocess.run(
        ["gio", *map(str, argv)], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("options", ["", "allow_delete"])
def test_gio_trash_changes_nothing_and_says_why(
    fresh_vault: VaultProcess, tmp_path: Path, options: str
) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    with MountProcess(fresh_vault.url, tmp_path, options=options) as mount:
        general = mount.mountpoint / "General"
        name, doc_id = sorted(_documents_in(general).items())[0]
        doc_dir = general / name
        source = doc_dir / os.getxattr(doc_dir, "user.vault.filename__v").decode()
        for target in (doc_dir, source):
            result = _gio("trash", target)
            print(options or "default", "gio trash:", result.returncode, result.stderr.strip())
            assert result.returncode != 0
            # GIO names the trash directory it could not make; the log says why.
            assert "Unable to find or create trash directory" in result.stderr, result.stderr
        assert source.is_file() and int(os.getxattr(doc_dir, "user.vault.id")) == doc_id
        assert not any(n.startswith(".Trash") for n in os.listdir(mount.mountpoint))
        log = mount.log_path.read_text()
        assert "no trash on this mount (.Trash-" in log, log[-2000:]
        if options:
            assert "Delete Immediately" in log
        else:
            assert "mount with -o allow_delete" in log
    with _api(fresh_vault) as api:
        assert api.get(f"/objects/documents/{doc_id}").json()["responseStatus"] == "SUCCESS"


def _document_named(folder: Path, name: str) -> Path:
    """The document directory in ``folder`` whose name starts with ``name``."""
    (found,) = [folder / n for n in _documents_in(folder) if n.startswith(name)]
    return found


def test_gnomes_hidden_list_keeps_old_versions_out_of_a_desktop_search(
    own_mount: MountProcess,
) -> None:
    root = own_mount.mountpoint
    doc_dir = _document_named(root / "General", "Travel Policy")
    filename = os.getxattr(doc_dir, "user.vault.filename__v").decode()
    version_dirs = os.listdir(doc_dir / "versions")
    assert len(version_dirs) == 4, version_dirs  # the demo's 0.1, 0.2, 1.0, 1.1
    # GIO reads the directory's .hidden: versions/ is hidden, the rest shown.
    info = _gio("info", "-a", "standard::is-hidden", doc_dir / "versions")
    assert info.returncode == 0, info.stderr
    assert "standard::is-hidden: TRUE" in info.stdout, info.stdout
    shown = _gio("list", doc_dir)
    assert shown.returncode == 0, shown.stderr
    assert set(shown.stdout.split()) == {filename, "renditions", "attachments", "relationships"}
    assert "versions" in _gio("list", "--hidden", doc_dir).stdout.split()
    # A desktop search walks the mount as GIO lists it, hidden directories left out
    # (gio tree, as GNOME Files' search): the document is found once and no document's
    # versions are listed.
    before = own_mount.quiet_calls()
    tree = _gio("tree", root)
    assert tree.returncode == 0, tree.stderr
    hits = [line for line in tree.stdout.splitlines() if "Travel_Policy" in line]
    assert len(hits) == 1 and hits[0].strip().endswith(filename), hits
    cost = calls_since(before, own_mount.quiet_calls())
    print("a desktop walk of the mount:", cost)
    assert not any("/versions" in endpoint for endpoint in cost), cost
    # The shell is as before: the list is reachable by name only, versions/ works.
    assert ".hidden" not in os.listdir(doc_dir) and "versions" in os.listdir(doc_dir)
    assert (doc_dir / ".hidden").read_bytes() == b"versions\n"
    assert os.listdir(doc_dir / "versions") == version_dirs
    walked = subprocess.run(
        ["find", str(doc_dir)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert not any(p.endswith("/.hidden") for p in walked)
    assert sum(1 for p in walked if p.endswith("/" + filename)) == 1 + len(version_dirs)


def test_the_hidden_list_refuses_writes_and_a_copy_goes_back_unchanged(
    own_mount: MountProcess, tmp_path: Path
) -> None:
    general = own_mount.mountpoint / "General"
    doc_dir = _document_named(general, "Travel Policy")
    hidden = doc_dir / ".hidden"
    with pytest.raises(PermissionError) as refused:
        hidden.open("w")
    assert refused.value.errno == errno.EACCES
    with pytest.raises(OSError) as refused:
        hidden.unlink()
    assert refused.value.errno == errno.EPERM
    # An editor's or rsync's way to replace it: a new file renamed over it.
    (doc_dir / ".hidden.new").write_bytes(b"")
    with pytest.raises(OSError) as refused:
        os.rename(doc_dir / ".hidden.new", hidden)
    assert refused.value.errno == errno.EPERM
    (doc_dir / ".hidden.new").unlink()
    assert hidden.read_bytes() == b"versions\n"
    # A copy of the folder made from the mount goes back into it with nothing to do.
    documents = _documents_in(general)
    copy = tmp_path / "copy"
    for source, target in ((f"{general}/", copy), (f"{copy}/", general)):
        rsync = subprocess.run(
            ["rsync", "-a", "--itemize-changes", source, str(target)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert rsync.returncode == 0, rsync.stderr
    assert not list(copy.rglob(".hidden"))
    assert not [line for line in rsync.stdout.splitlines() if line.startswith(">f")], rsync.stdout
    own_mount.settle()
    assert _documents_in(general) == documents
    assert sorted(os.listdir(doc_dir)) == sorted(os.listdir(copy / doc_dir.name))
