"""A crawl of the whole tree over WebDAV (a PROPFIND of every folder, as a sync tool or
an indexer on a mapped drive makes) spends no more than the walks' share of the vault's
budget: past it a folder whose listing needs the vault is refused with 507 (never a
short or empty answer), the status names the client, and a document asked for
directly still opens (docs/user-guide.md, "The vault's budget")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.bridge.test_index_mount import bulk_create
from tests.conftest import API, login
from tests.webdav.test_listing import body
from vaultfs.testing.mount_process import calls_but_polls
from vaultfs.testing.vault_process import VaultProcess
from vaultfs.testing.webdav_process import WebdavProcess

#: documents crawled; the share: calls per 5 minutes a client, and a day
COUNT, BURST, DAY = 30, 8, 12


@pytest.fixture
def crawled(fresh_vault: VaultProcess, tmp_path: Path) -> Iterator[httpx.Client]:
    headers = {"Authorization": login(fresh_vault.url)}
    with httpx.Client(base_url=fresh_vault.url + API, headers=headers, timeout=120) as api:
        bulk_create(api, COUNT, "crawled")
    front = WebdavProcess(
        fresh_vault.url,
        tmp_path,
        args=["--walk-burst", str(BURST), "--walk-calls", str(DAY)],
    )
    try:
        front.start()
        with httpx.Client(base_url=front.address, timeout=120) as dav:
            yield dav
    finally:
        front.stop()


def listing(dav: httpx.Client, path: str) -> httpx.Response:
    return dav.request(
        "PROPFIND", quote(path), headers={"Depth": "1"}, content=body(["resourcetype"])
    )


def test_a_crawl_over_webdav_spends_the_walks_share_and_is_refused_past_it(
    crawled: httpx.Client,
) -> None:
    dav = crawled
    before = calls_but_polls(dav.get("/.vaultfs/status").json())  # (a poll may fall in)
    names = [f"crawled {i}" for i in range(COUNT)]
    folder = listing(dav, "/General/")
    assert folder.status_code == 207
    assert all(quote(f"/General/{name}/") in folder.text for name in names)
    answered: list[int] = []
    for name in names:
        # A document's folder is the index's: no call. Its versions/ need its details.
        assert listing(dav, f"/General/{name}/").status_code == 207
        answered.append(listing(dav, f"/General/{name}/versions/").status_code)
    # The share is spent (the listing of /General/ read ahead the details of its
    # first documents, for this client too), and past it the vault is not asked.
    assert 207 in answered and 507 in answered, answered
    details = dav.get("/.vaultfs/status").json()["api_calls_by_endpoint"]
    assert details.get("GET /objects/documents/{id}", 0) <= BURST, details
    # What was read stays read: listed again, those folders cost nothing.
    again = [listing(dav, f"/General/{n}/versions/").status_code for n in names]
    assert all(now == 207 for now, first in zip(again, answered, strict=True) if first == 207)
    status = dav.get("/.vaultfs/status").json()
    walks = status["walks"]
    assert walks["spent"] <= BURST and walks["refused"] >= 1
    [client] = [p for p in walks["programs"] if p["refused"]]
    assert client["program"].startswith("python-httpx/") and "127.0.0.1" in client["program"]
    assert walks["stopped"]["program"] == client["program"]
    # What a person asks for directly goes through: a document's file.
    source = dav.get(quote(f"/General/{names[-1]}/{names[-1]}.txt"))
    assert source.status_code in (200, 404), source.status_code
    assert calls_but_polls(status) - before <= BURST + 4, status["api_calls_by_endpoint"]
