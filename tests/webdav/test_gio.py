"""GNOME's gio (gvfs's WebDAV backend) copying in and out of the front, in a session
bus of its own (``dbus-run-session``: no desktop needed): a copy over a document's
source file is one version with the exact bytes, a copy out gives them back, and a
new file copied into a folder is one new document."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.webdav.test_webdav_front import (
    api_calls,
    latest_bytes,
    record,
    source_path,
    version_count,
)
from vaultfs.testing.webdav_process import WebdavProcess

pytestmark = pytest.mark.skipif(
    shutil.which("gio") is None
    or shutil.which("dbus-run-session") is None
    or not Path("/usr/libexec/gvfsd-dav").exists(),
    reason="needs gio, dbus-run-session and gvfs's WebDAV backend (gvfs-backends)",
)

#: the API calls a copy in and out may cost
MAX_CALLS = 40


def gio(home: Path, script: str) -> str:
    """``script`` (gio commands) run in a session bus of its own; its output."""
    home.mkdir(exist_ok=True)
    result = subprocess.run(
        ["dbus-run-session", "--", "sh", "-ec", script],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_gio_copies_in_and_out(
    front: WebdavProcess, module_api: httpx.Client, tmp_path: Path
) -> None:
    dav = front.address.replace("http://", "dav://")
    with httpx.Client(base_url=front.address, timeout=60) as client:
        source = source_path(client, 9)  # Price List 2024
        calls = api_calls(client)
    versions = version_count(module_api, 9)
    documents = len(module_api.get("/objects/documents").json()["documents"])
    local, new, back = tmp_path / "local.csv", tmp_path / "new.bin", tmp_path / "back.csv"
    local.write_bytes(os.urandom(150_000))
    new.write_bytes(os.urandom(20_000))
    listing = gio(
        tmp_path / "home",
        f"gio mount {dav}/\n"
        f"gio list {dav}/General/\n"
        f"gio copy {local} '{dav}{quote(source)}'\n"
        f"gio copy '{dav}{quote(source)}' {back}\n"
        f"gio copy {new} '{dav}/General/Copied%20by%20gio.bin'\n"
        f"gio mount -u {dav}/\n",
    )
    assert "Price List 2024" in listing.splitlines()
    assert version_count(module_api, 9) == versions + 1
    assert latest_bytes(module_api, 9) == local.read_bytes()
    assert record(module_api, 9)["document"]["locked__v"] is False
    assert back.read_bytes() == local.read_bytes()
    listed = module_api.get("/objects/documents").json()["documents"]
    assert len(listed) == documents + 1
    made = max(listed, key=lambda d: d["document"]["id"])["document"]["id"]
    assert latest_bytes(module_api, made) == new.read_bytes()
    with httpx.Client(base_url=front.address, timeout=60) as client:
        assert api_calls(client) - calls <= MAX_CALLS
