"""A real mount of the local vault on each backend (SQLite and PostgreSQL): listing,
reading, saving in place, appending and a new document behave the same."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.server.helpers import api_client
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount


def test_mount_read_save_append_and_create(fresh_vault: VaultProcess, tmp_path: Path) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    with MountProcess(fresh_vault.url, tmp_path / "m") as mount, api_client(fresh_vault.url) as api:
        general = mount.mountpoint / "General"
        assert "Release Checklist" in os.listdir(general)
        source = general / "Release Checklist" / "Release_Checklist.md"
        doc_id = int(os.getxattr(source.parent, "user.vault.id"))
        original = api.get(f"/objects/documents/{doc_id}/file").content
        assert source.read_bytes() == original
        versions = len(api.get(f"/objects/documents/{doc_id}").json()["versions"])
        subprocess.run(["sh", "-c", 'echo appended >> "$1"', "sh", source], check=True)
        mount.settle()  # the check-in follows the last close
        assert api.get(f"/objects/documents/{doc_id}/file").content == original + b"appended\n"
        local = tmp_path / "replaced.md"
        local.write_bytes(b"replaced\n")
        subprocess.run(["cp", local, source], check=True)
        mount.settle()
        assert api.get(f"/objects/documents/{doc_id}/file").content == b"replaced\n"
        assert len(api.get(f"/objects/documents/{doc_id}").json()["versions"]) == versions + 2
        subprocess.run(["cp", local, general / "From Mount.md"], check=True)
        new = general / "From Mount" / "From Mount.md"
        wait_until(new.exists, timeout=20, what="the new document")
        assert new.read_bytes() == b"replaced\n"
