"""Real LibreOffice through the mount: a document open for editing is checked out in
the vault (LibreOffice's own lock file beside it), and checked in when it closes; its
lock file is in the format the mount shows another user's check-out in."""

from __future__ import annotations

import json
import os
import subprocess

import httpx
import pytest

from tests.apps.conftest import Documents, Save
from tests.conftest import EDITOR, login
from tests.programs import OFFICE_DRIVER, SYSTEM_PYTHON, Office
from vaultfs.server.samples import docx_bytes
from vaultfs.testing.mount_process import calls_but_polls
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount


def test_a_document_open_in_libreoffice_is_checked_out_until_it_closes(
    documents: Documents, office: Office
) -> None:
    path = documents.make("open.docx", docx_bytes(["Open in LibreOffice"]))
    save = Save(documents, path)
    lock_url = f"/objects/documents/{save.doc_id}/lock"
    lock_file = path.parent / f".~lock.{path.name}#"
    holder = subprocess.Popen(
        [SYSTEM_PYTHON, str(OFFICE_DRIVER), office.pipe, "hold", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        opened = json.loads(holder.stdout.readline())
        assert opened == {"readonly": False}
        before = calls_but_polls(documents.mount.status())  # (the lock file stands)
        # LibreOffice made its lock file: the document is checked out by this user.
        assert save.api.get(lock_url).json().get("lock"), "not checked out while open"
        line = lock_file.read_text()
        assert line.endswith(";") and len(line.rstrip(";").split(",")) == 5, line
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert json.loads(holder.stdout.readline()) == {"closed": True}
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)
    wait_until(lambda: not save.api.get(lock_url).json().get("lock"), timeout=15,
               what="the check-out to end")  # fmt: skip
    assert not lock_file.exists()
    save.check(drafts=0)  # opened and closed unchanged: no version
    # Closing cost the undo of the check-out, and nothing else of note.
    assert calls_but_polls(documents.mount.quiet()) - before <= 3


def test_libreoffice_meeting_a_check_out_the_mount_did_not_know_of_never_edits(
    documents: Documents, office: Office, module_vault: VaultProcess
) -> None:
    path = documents.make("theirs.docx", docx_bytes(["Checked out elsewhere"]))
    save = Save(documents, path)
    lock_file = path.parent / f".~lock.{path.name}#"
    with httpx.Client(
        base_url=module_vault.url + "/api/v25.1",
        headers={"Authorization": login(module_vault.url, EDITOR)},
    ) as editor:
        assert editor.post(f"/objects/documents/{save.doc_id}/lock").json()["responseStatus"] == (
            "SUCCESS"
        )
        try:
            assert path.stat().st_mode & 0o200  # the index does not know of it yet
            # LibreOffice's lock file is refused (EBUSY); headless, it then gives up.
            first = office("readonly", path, check=False)
            assert first.returncode == 3 or json.loads(first.stdout) == {"readonly": True}
            # The refusal showed the check-out: read-only, with the holder's lock file.
            assert not path.stat().st_mode & 0o222
            assert lock_file.name in os.listdir(path.parent)
            assert lock_file.read_text().split(",")[1] == EDITOR
            assert json.loads(office("readonly", path).stdout) == {"readonly": True}
        finally:
            editor.delete(f"/objects/documents/{save.doc_id}/lock")
    save.check(drafts=0)
