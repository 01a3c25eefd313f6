"""cadaver (Debian's command-line WebDAV client), scripted, against the front: a lock,
a put over a document's source file and an unlock are one version with the exact
bytes, and the document is checked in after."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.conftest import login
from tests.webdav.test_webdav_front import latest_bytes, record, version_count
from vaultfs.testing.vault_process import VaultProcess
from vaultfs.testing.webdav_process import WebdavProcess


@pytest.mark.skipif(shutil.which("cadaver") is None, reason="needs Debian's cadaver")
def test_cadaver_lock_put_unlock_is_one_version(fresh_vault: VaultProcess, tmp_path: Path) -> None:
    local = tmp_path / "local.docx"
    local.write_bytes(os.urandom(40_000))
    with (
        WebdavProcess(fresh_vault.url, tmp_path) as front,
        httpx.Client(
            base_url=fresh_vault.url + "/api/v25.1",
            headers={"Authorization": login(fresh_vault.url)},
            timeout=60,
        ) as api,
    ):
        versions = version_count(api, 7)  # Travel Policy
        script = (
            'cd "General/Travel Policy"\n'
            "lock Travel_Policy.docx\n"
            f"put {local} Travel_Policy.docx\n"
            "unlock Travel_Policy.docx\n"
            f"get Travel_Policy.docx {tmp_path / 'back.docx'}\n"
            "quit\n"
        )
        result = subprocess.run(
            ["cadaver", front.address + "/"],
            input=script,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        )
        assert result.returncode == 0, result.stderr
        for step in ("Locking", "Uploading", "Unlocking", "Downloading"):
            assert step in result.stdout, result.stdout
        assert "failed" not in result.stdout, result.stdout
        assert version_count(api, 7) == versions + 1
        assert latest_bytes(api, 7) == local.read_bytes()
        assert record(api, 7)["document"]["locked__v"] is False
        assert (tmp_path / "back.docx").read_bytes() == local.read_bytes()
