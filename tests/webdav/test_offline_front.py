"""The WebDAV front offline, as the mount (tests/faults/test_offline.py): started from
its kept index with the vault stopped, it lists and serves what it keeps, refuses at
once what it does not, takes a PUT into its spool, and the vault has it, once, when
it is back."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from vaultfs.testing.vault_process import VaultProcess, wait_until
from vaultfs.testing.webdav_process import WebdavProcess

CHECKLIST = "/General/Release Checklist/Release_Checklist.md"
OTHER = "/General/Travel Policy"
#: a GET of content that is not kept answers at once offline (a wait for the client's
#: retries would take far longer)
AT_ONCE = 10.0


@pytest.fixture
def api(fresh_api: httpx.Client) -> httpx.Client:
    return fresh_api


def versions(api: httpx.Client, doc_id: int) -> int:
    return len(api.get(f"/objects/documents/{doc_id}").json()["versions"])


def test_the_front_starts_offline_and_its_put_reaches_the_vault_once_back(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    front = WebdavProcess(fresh_vault.url, tmp_path)
    try:
        front.start()
        with httpx.Client(base_url=front.address, timeout=120) as dav:
            before = dav.get(quote(CHECKLIST)).content  # kept from now on
            listed = dav.request("PROPFIND", quote("/General/"), headers={"Depth": "1"})
            assert listed.status_code == 207
        docs = {
            d["document"]["name__v"]: d["document"]
            for d in api.get("/objects/documents", params={"limit": 200}).json()["documents"]
        }
        doc_id = int(docs["Release Checklist"]["id"])
        unread = f"{OTHER}/{docs['Travel Policy']['filename__v']}"
        count = versions(api, doc_id)
        front.stop()
        fresh_vault.stop()
        front.start()
        with httpx.Client(base_url=front.address, timeout=120) as dav:
            again = dav.request("PROPFIND", quote("/General/"), headers={"Depth": "1"})
            assert again.status_code == 207 and "Release%20Checklist" in again.text
            assert dav.get(quote(CHECKLIST)).content == before
            started = time.monotonic()
            refused = dav.get(quote(unread))
            assert refused.status_code == 503
            assert time.monotonic() - started < AT_ONCE
            saved = before + b"saved over WebDAV offline\n"
            put = dav.put(quote(CHECKLIST), content=saved)
            assert put.status_code in (200, 201, 204), put.text
            assert dav.get(quote(CHECKLIST)).content == saved
            fresh_vault.start()
            wait_until(
                lambda: versions(api, doc_id) == count + 1,
                timeout=120,
                what="the save made offline in the vault",
            )
            assert api.get(f"/objects/documents/{doc_id}/file").content == saved
            wait_until(
                lambda: not api.get(f"/objects/documents/{doc_id}/lock").json().get("lock"),
                timeout=60,
                what="the check-out let go",
            )
        assert versions(api, doc_id) == count + 1
    finally:
        front.stop()
