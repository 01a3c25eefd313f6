"""The save matrix: real programs save documents through a real mount of a real vault.

Each case makes a document of its own through the API (so nothing has read it through
the mount yet: its listed size is the API's KB estimate), lets one program save it the
way that program does, and checks with ``Save.check``: exactly one new draft with
exactly the bytes written, no check-out left, no helper file made into a document or
a version, the older version intact. docs/writing.md has the matrix as a table.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import API, EDITOR, login
from tests.programs import Office, need
from vaultfs.server.samples import docx_bytes, pdf_bytes
from vaultfs.testing.vault_process import VaultProcess, wait_until

from .conftest import Documents, Save, run, total_documents

pytestmark = pytest.mark.mount

TEXT = b"alpha line\nbeta line\n"


# --- the shell and the core utilities ---------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"", b"short\n", b"x" * 1500 + b"\n", os.urandom(3 * 1024 * 1024 + 7)],
    ids=["empty", "under-1k", "not-a-kb-multiple", "several-mib"],
)
def test_append_to_a_never_read_document(documents: Documents, content: bytes) -> None:
    path = documents.make("seed.txt", content)
    save = Save(documents, path)
    run("sh", "-c", 'echo "gamma line" >> "$1"', "sh", path)
    save.check(content + b"gamma line\n")


def test_two_appends_in_a_row(documents: Documents) -> None:
    path = documents.make("log.txt", TEXT)
    save = Save(documents, path)
    run("sh", "-c", 'echo one >> "$1"; echo two >> "$1"', "sh", path)
    save.check(TEXT + b"one\ntwo\n", drafts=2)


def test_open_close_pairs_without_a_write_make_no_version(documents: Documents) -> None:
    """What LibreOffice does after a save: open read-write, close, again at once."""
    path = documents.make("logo.txt", TEXT)
    save = Save(documents, path)
    for _ in range(5):
        for _ in range(2):
            os.close(os.open(path, os.O_RDWR))
    save.check(drafts=0)
    assert path.read_bytes() == TEXT


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("cat-redirect", 'printf "new content\\n" > "$1"'),
        ("cp", 'printf "new content\\n" > "$2"; cp "$2" "$1"'),
        ("cp-a", 'printf "new content\\n" > "$2"; cp -a "$2" "$1"'),
        ("truncate-then-write", 'truncate -s 0 "$1"; printf "new content\\n" >> "$1"'),
    ],
)
def test_replacing_the_content(
    documents: Documents, tmp_path: Path, name: str, command: str
) -> None:
    path = documents.make(f"{name}.txt", TEXT)
    save = Save(documents, path)
    run("sh", "-c", command, "sh", path, tmp_path / "local.txt")
    drafts = 2 if name == "truncate-then-write" else 1  # two commands, two saves
    save.check(b"new content\n", drafts=drafts)


def test_truncate_to_a_size(documents: Documents) -> None:
    path = documents.make("cut.txt", TEXT)
    save = Save(documents, path)
    run("truncate", "-s", "5", path)
    save.check(TEXT[:5])


def test_dd_conv_notrunc_overwrites_in_place(documents: Documents) -> None:
    path = documents.make("dd.txt", TEXT)
    save = Save(documents, path)
    run("dd", f"of={path}", "bs=1", "seek=2", "conv=notrunc", "status=none", input="XY")
    save.check(TEXT[:2] + b"XY" + TEXT[4:])


def test_sed_in_place(documents: Documents) -> None:
    path = documents.make("sed.txt", TEXT)
    save = Save(documents, path)
    run("sed", "-i", "s/beta/BETA/", path)
    save.check(TEXT.replace(b"beta", b"BETA"))


def test_python_temp_file_and_os_replace(documents: Documents) -> None:
    path = documents.make("py.txt", TEXT)
    save = Save(documents, path)
    script = (
        "import os, sys, tempfile\n"
        "target = sys.argv[1]\n"
        "fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target))\n"
        "os.write(fd, b'replaced by python\\n'); os.fsync(fd); os.close(fd)\n"
        "os.replace(tmp, target)\n"
    )
    run("python3", "-c", script, path)
    save.check(b"replaced by python\n")


def test_rsync_into_the_mount(documents: Documents, tmp_path: Path) -> None:
    path = documents.make("synced.txt", TEXT)
    save = Save(documents, path)
    local = tmp_path / path.name
    local.write_bytes(b"synced\n" * 300)
    run("rsync", local, path)
    save.check(local.read_bytes())


# --- editors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        "",  # vim's defaults: backupcopy=auto, writebackup, swap file
        "backupcopy=yes",
        "backupcopy=no",
        "nowritebackup",
    ],
    ids=["default", "backupcopy-yes", "backupcopy-no", "nowritebackup"],
)
def test_vim(documents: Documents, settings: str) -> None:
    need("vim")
    path = documents.make("vim.txt", TEXT)
    save = Save(documents, path)
    setup = f"set backupskip= {settings}" if settings else "set backupskip="
    run("vim", "-es", "-u", "NONE", "-c", setup, "-c", "1s/^/vim: /", "-c", "wq", path)
    save.check(b"vim: " + TEXT)


@pytest.mark.parametrize("backup", ["rename", "copy"])
def test_emacs(documents: Documents, backup: str) -> None:
    emacs = need("emacs")
    path = documents.make("emacs.txt", TEXT)
    save = Save(documents, path)
    by_copying = "t" if backup == "copy" else "nil"
    run(
        emacs,
        "-Q",
        "--batch",
        "--eval",
        f"(setq make-backup-files t backup-by-copying {by_copying})",
        path,
        "--eval",
        '(progn (goto-char (point-max)) (insert "emacs line\\n") (save-buffer))',
    )
    save.check(TEXT + b"emacs line\n")


def test_nano(documents: Documents) -> None:
    need("nano")
    tmux = need("tmux")
    path = documents.make("nano.txt", TEXT)
    save = Save(documents, path)
    session = f"vaultfs-nano-{os.getpid()}"
    run(
        tmux,
        "new-session",
        "-d",
        "-s",
        session,
        "-x",
        "80",
        "-y",
        "24",
        "nano",
        "--ignorercfiles",
        path,
    )
    try:
        wait_until(
            lambda: "alpha" in run(tmux, "capture-pane", "-p", "-t", session).stdout,
            timeout=30,
            what="nano to show the file",
        )
        run(tmux, "send-keys", "-t", session, "-l", "nano: ")
        run(tmux, "send-keys", "-t", session, "C-o")
        run(tmux, "send-keys", "-t", session, "Enter")
        run(tmux, "send-keys", "-t", session, "C-x")
        wait_until(
            lambda: run(tmux, "has-session", "-t", session, check=False).returncode != 0,
            timeout=30,
            what="nano to save and exit",
        )
    finally:
        run(tmux, "kill-session", "-t", session, check=False)
    save.check(b"nano: " + TEXT)


@pytest.mark.parametrize("backup", [False, True], ids=["plain", "backup"])
def test_gio_save(documents: Documents, backup: bool) -> None:
    """GNOME's save path (g_file_replace): a temp file, fsync, rename over the file."""
    gio = need("gio")
    path = documents.make("gio.txt", TEXT)
    save = Save(documents, path)
    args = ["save", "--backup", str(path)] if backup else ["save", str(path)]
    run(gio, *args, input="saved by gio\n")
    save.check(b"saved by gio\n")


# --- office files -----------------------------------------------------------------------


def test_never_read_office_files_open_from_their_end(documents: Documents) -> None:
    """zip readers (docx, xlsx, odt) and PDF readers start at the end the size tells."""
    docx = docx_bytes(["A paragraph", "Another one"])
    path = documents.make("policy.docx", docx)
    with zipfile.ZipFile(path) as archive:
        assert "word/document.xml" in archive.namelist()
    pdf = pdf_bytes("Report", ["line one"])
    pdf_path = documents.make("report.pdf", pdf)
    with open(pdf_path, "rb") as f:
        f.seek(-len(b"%%EOF\n"), os.SEEK_END)
        assert f.read().strip() == b"%%EOF"
    assert os.stat(pdf_path).st_size == len(pdf)


def test_libreoffice_edit_and_save(documents: Documents, office: Office) -> None:
    path = documents.make("letter.docx", docx_bytes(["Dear reader,", "the body."]))
    save = Save(documents, path)
    office("edit", path, "Inserted by LibreOffice. ")
    latest = save.check()
    assert latest and latest != save.original
    text = office("text", path).stdout
    assert "Inserted by LibreOffice." in text and "the body." in text
    save.check()  # reading it again changed nothing


def test_libreoffice_save_as_over_an_existing_docx(
    documents: Documents, office: Office, tmp_path: Path
) -> None:
    target = documents.make("target.docx", docx_bytes(["Old content"]))
    save = Save(documents, target)
    source = tmp_path / "source.docx"
    source.write_bytes(docx_bytes(["New content"]))
    office("saveas", source, target, "Saved as. ")
    latest = save.check()
    assert latest != save.original
    text = office("text", target).stdout
    assert "Saved as." in text and "New content" in text and "Old content" not in text


def test_libreoffice_opens_read_only_what_another_user_checked_out(
    documents: Documents, office: Office, module_vault: VaultProcess
) -> None:
    path = documents.make("held.docx", docx_bytes(["Held elsewhere"]))
    save = Save(documents, path)
    with httpx.Client(
        base_url=module_vault.url + API, headers={"Authorization": login(module_vault.url, EDITOR)}
    ) as editor:
        assert editor.post(f"/objects/documents/{save.doc_id}/lock").json()["responseStatus"] == (
            "SUCCESS"
        )
        try:
            # Once the mount knows of the lock (a refresh), it shows the file read-only.
            documents.mount.refresh()
            assert not path.stat().st_mode & 0o222
            answer = json.loads(office("readonly", path).stdout)
            assert answer == {"readonly": True}
            assert "Held elsewhere" in office("text", path).stdout
        finally:
            editor.delete(f"/objects/documents/{save.doc_id}/lock")
    save.check(drafts=0)


# --- new documents ----------------------------------------------------------------------


def test_a_shell_redirection_into_a_folder_makes_one_whole_document(documents: Documents) -> None:
    """``echo > new`` opens with O_TRUNC and closes a duplicate descriptor before the
    first write: the document is made from what is written, not from the empty file."""
    general = documents.mount.mountpoint / "General"
    before = total_documents(documents.api)
    run("sh", "-c", 'echo hello > "$1"; printf "more\\n" >> "$1"', "sh", general / "shell new.txt")
    documents.mount.settle()
    path = general / "shell new" / "shell new.txt"
    assert path.read_bytes() == b"hello\nmore\n"
    assert total_documents(documents.api) == before + 1
    save = Save(documents, path)
    assert save.original == b"hello\nmore\n"


def test_a_child_closing_an_inherited_descriptor_takes_nothing_early(documents: Documents) -> None:
    """A program that starts another while a new file is open: the child's close of the
    inherited descriptor is a flush, which takes nothing; the document is made from
    everything written, at the last close."""
    general = documents.mount.mountpoint / "General"
    with open(general / "forked note.txt", "wb") as f:
        f.write(b"first half, ")
        f.flush()  # in the mount before the child closes its copy of the descriptor
        run("true", close_fds=False)
        f.write(b"second half\n")
    documents.mount.settle()
    path = general / "forked note" / "forked note.txt"
    assert path.read_bytes() == b"first half, second half\n"
    assert Save(documents, path).original == b"first half, second half\n"
