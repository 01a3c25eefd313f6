"""Saves at the default poll interval (30 s): one save is one complete version, and
the mount tells the truth right after it, without waiting for a poll.

The documents here are made through the mount itself (a new file in a folder), so the
mount never needs a poll to see them. Each case checks through the vault's API:
exactly one new version per save, holding exactly what was written, and no lock left.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import API, login
from tests.programs import Office, need
from vaultfs.server.samples import docx_bytes
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess

from .conftest import run, total_documents

pytestmark = pytest.mark.mount

TEXT = b"alpha line\nbeta line\n"


@pytest.fixture(scope="module")
def api(module_vault: VaultProcess) -> Iterator[httpx.Client]:
    headers = {"Authorization": login(module_vault.url)}
    with httpx.Client(base_url=module_vault.url + API, headers=headers, timeout=30) as client:
        yield client


_count = iter(range(1, 10_000))


class Doc:
    """A document made through the mount (``cp`` of a new file into General)."""

    def __init__(
        self,
        mount: MountProcess,
        api: httpx.Client,
        tmp_path: Path,
        suffix: str = ".txt",
        content: bytes = TEXT,
    ) -> None:
        self.mount, self.api = mount, api
        name = f"saved {next(_count)}"
        seed = tmp_path / f"{name}{suffix}"
        seed.write_bytes(content)
        run("cp", seed, mount.mountpoint / "General")
        mount.settle()
        self.path = mount.mountpoint / "General" / name / f"{name}{suffix}"
        assert self.path.read_bytes() == content  # shown at once, no poll
        self.doc_id = int(os.getxattr(self.path, "user.vault.id"))
        self.versions = self.version_numbers()

    def record(self) -> dict[str, Any]:
        body: dict[str, Any] = self.api.get(f"/objects/documents/{self.doc_id}").json()
        assert body["responseStatus"] == "SUCCESS", body
        return body

    def version_numbers(self) -> list[str]:
        return [v["number"] for v in self.record()["versions"]]

    def locked(self) -> bool:
        return bool(self.api.get(f"/objects/documents/{self.doc_id}/lock").json().get("lock"))

    def check(self, expected: bytes | None, *, versions: int = 1) -> None:
        """``versions`` new versions since the last check, the latest ``expected`` (None:
        whatever the program wrote), no lock, and the mount showing it at once: writable,
        exact size and content."""
        self.mount.settle()
        now = self.version_numbers()
        assert now[: len(self.versions)] == self.versions
        assert len(now) == len(self.versions) + versions, (self.versions, now)
        latest = self.api.get(f"/objects/documents/{self.doc_id}/file").content
        if expected is None:
            expected = latest
        assert hashlib.md5(latest).hexdigest() == hashlib.md5(expected).hexdigest(), latest
        assert not self.locked()
        info = os.stat(self.path)
        assert info.st_mode & stat.S_IWUSR, "the mount shows the saved file read-only"
        assert info.st_size == len(expected)
        assert os.getxattr(self.path, "user.vault.locked__v") == b"false"
        assert self.path.read_bytes() == expected
        self.versions = now


@pytest.fixture
def doc(module_mount: MountProcess, api: httpx.Client, tmp_path: Path) -> Doc:
    return Doc(module_mount, api, tmp_path)


def calls(mount: MountProcess) -> int:
    return sum(mount.quiet_calls().values())  # (the default poll may fall in the window)


# --- shell redirections: one open file, many closes ------------------------------------


def test_a_group_of_children_writing_one_redirection_makes_one_version(doc: Doc) -> None:
    """Each child closes its inherited descriptor (a flush): only the last close of
    the open file (its release) checks in."""
    run("sh", "-c", '{ /bin/echo one; /usr/bin/printf "two\\n"; /bin/echo three; } > "$1"',
        "sh", doc.path)  # fmt: skip
    doc.check(b"one\ntwo\nthree\n")


def test_a_subshell_appending_makes_one_version(doc: Doc) -> None:
    run("sh", "-c", '(echo a; /bin/echo b; echo c) >> "$1"', "sh", doc.path)
    doc.check(TEXT + b"a\nb\nc\n")


def test_a_descriptor_kept_open_across_commands_holds_the_lock_until_it_is_closed(
    doc: Doc,
) -> None:
    """``exec 3>>F; echo a >&3; ...pause...; echo b >&3; exec 3>&-``: the document stays
    checked out between the writes, a child's close of its copy checks nothing in."""
    fd = os.open(doc.path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"a\n")
        subprocess.run(["/bin/echo", "from a child"], stdout=fd, check=True)  # its close
        assert doc.locked()  # still checked out: nobody else can save in between
        assert doc.version_numbers() == doc.versions  # nothing checked in yet
        os.write(fd, b"b\n")
    finally:
        os.close(fd)
    doc.check(TEXT + b"a\nfrom a child\nb\n")


# --- saves by rename, then another save at once ----------------------------------------


def test_sed_in_place_then_vim_at_once(doc: Doc) -> None:
    need("vim")
    run("sed", "-i", "s/beta/BETA/", doc.path)
    doc.check(TEXT.replace(b"beta", b"BETA"))  # writable and unlocked at once
    run("vim", "-es", "-u", "NONE", "-c", "set backupskip=", "-c", "1s/^/vim: /", "-c", "wq",
        doc.path)  # fmt: skip
    doc.check(b"vim: " + TEXT.replace(b"beta", b"BETA"))


@pytest.mark.parametrize("settings", ["", "backupcopy=yes", "backupcopy=no"])
def test_vim_writes_twice_in_one_session(doc: Doc, settings: str) -> None:
    """The second ``:w`` must not find the file changed since vim wrote it (no ``!``)."""
    need("vim")
    result = run(
        "vim", "-es", "-u", "NONE", "-c", f"set backupskip= {settings}",
        "-c", "1s/^/one: /", "-c", "w", "-c", "1s/^/two: /", "-c", "w", "-c", "q",
        doc.path, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "changed since reading" not in result.stdout + result.stderr
    doc.check(b"two: one: " + TEXT, versions=2)


# --- desktop programs, one save right after another ------------------------------------


def test_emacs_then_gio_save_at_once(doc: Doc) -> None:
    emacs, gio = need("emacs"), need("gio")
    append = '(progn (goto-char (point-max)) (insert "emacs line\\n") (save-buffer))'
    run(emacs, "-Q", "--batch", "--eval", "(setq make-backup-files t)", doc.path, "--eval", append)
    doc.check(TEXT + b"emacs line\n")
    run(gio, "save", "--backup", str(doc.path), input="saved by gio\n")
    doc.check(b"saved by gio\n")


def test_libreoffice_saves_twice_at_once(
    module_mount: MountProcess, api: httpx.Client, tmp_path: Path, office: Office
) -> None:
    doc = Doc(module_mount, api, tmp_path, ".docx", docx_bytes(["Dear reader,", "the body."]))
    office("edit", doc.path, "First. ")
    doc.check(None)
    office("edit", doc.path, "Second. ")  # the mount showed the first save writable
    doc.check(None)
    text = office("text", doc.path).stdout
    assert "Second. First. " in text and "the body." in text, text
    doc.check(None, versions=0)  # reading it again changed nothing


# --- rsync of new files, twice ----------------------------------------------------------


def test_rsync_of_new_files_twice_creates_nothing_the_second_time(
    module_mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    need("rsync")
    source = tmp_path / "batch"
    source.mkdir()
    for n in range(3):
        (source / f"synced file {n}.txt").write_bytes(f"file {n}\n".encode())
    general = module_mount.mountpoint / "General"
    before = total_documents(api)
    run("rsync", "-r", f"{source}/", f"{general}/")
    module_mount.settle()
    assert total_documents(api) == before + 3
    shown = general / "synced file 1" / "synced file 1.txt"
    assert shown.read_bytes() == b"file 1\n"
    doc_id = int(os.getxattr(shown, "user.vault.id"))
    versions = len(api.get(f"/objects/documents/{doc_id}").json()["versions"])
    run("rsync", "-r", f"{source}/", f"{general}/")
    module_mount.settle()
    assert total_documents(api) == before + 3  # no duplicates
    assert len(api.get(f"/objects/documents/{doc_id}").json()["versions"]) == versions
    # A changed file sent again is a new draft of its document, not a second one.
    (source / "synced file 1.txt").write_bytes(b"file 1, changed\n")
    run("rsync", "-r", f"{source}/", f"{general}/")
    module_mount.settle()
    assert total_documents(api) == before + 3
    assert len(api.get(f"/objects/documents/{doc_id}").json()["versions"]) == versions + 1
    assert shown.read_bytes() == b"file 1, changed\n"


# --- what a save costs --------------------------------------------------------------------


def test_an_open_for_writing_that_never_writes_costs_no_call(doc: Doc) -> None:
    before = calls(doc.mount)
    for _ in range(5):
        os.close(os.open(doc.path, os.O_RDWR))
    doc.mount.settle()
    assert calls(doc.mount) == before
    doc.check(TEXT, versions=0)


def test_cp_over_a_document_costs_at_most_six_calls(doc: Doc, tmp_path: Path) -> None:
    local = tmp_path / "new.txt"
    local.write_bytes(b"copied over\n")
    before = calls(doc.mount)
    run("cp", local, doc.path)
    doc.mount.settle()
    # the look at the lock (another client of this user?), lock, verify, the fence (the
    # lock again), upload, unlock
    assert calls(doc.mount) - before <= 6
    doc.check(b"copied over\n")
