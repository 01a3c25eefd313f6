"""Response formats: XML for every JSON answer, ``format`` over ``Accept``, CSV where a
route opts in, EXCEPTION always JSON, downloads untouched."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.server.helpers import api_client, assert_error, assert_ok
from vaultfs.server.config import ServerConfig
from vaultfs.server.formats import render, to_csv, to_xml
from vaultfs.server.limits import RateLimiter
from vaultfs.server.middleware import ApiMiddleware
from vaultfs.server.state import VaultState
from vaultfs.server.storage.blobs import BlobStore
from vaultfs.server.storage.db import Database
from vaultfs.testing.vault_process import VaultProcess

XML = {"Accept": "application/xml"}


def _xml(response: httpx.Response) -> ET.Element:
    assert response.headers["content-type"].startswith("application/xml"), response.text
    root = ET.fromstring(response.content)
    assert root.tag == "VaultResponse"
    return root


def test_versions_and_login_in_xml(vault_server: VaultProcess) -> None:
    root = _xml(httpx.get(vault_server.url + "/api/", headers=XML))
    assert root.findtext("responseStatus") == "SUCCESS"
    assert root.findtext("values/v25.1") == vault_server.url + "/api/v25.1"
    login = httpx.post(
        vault_server.url + "/api/v25.1/auth",
        data={"username": "admin@vaultfs.demo", "password": "test-Passw0rd!"},
        headers=XML,
    )
    root = _xml(login)
    # A list is its key's element repeated, one per item.
    vaults = root.findall("vaultIds")
    assert len(vaults) == 2
    assert vaults[0].findtext("id") == root.findtext("vaultId")
    assert vaults[1].findtext("url", "").endswith("/api")
    session = root.findtext("sessionId")
    assert session
    listing = httpx.get(
        vault_server.url + "/api/v25.1/objects/documents",
        params={"limit": 3},
        headers={**XML, "Authorization": session},
    )
    documents = _xml(listing).findall("documents/document")
    assert len(documents) == 3
    assert all(d.findtext("id", "").isdigit() for d in documents)


def test_errors_in_xml_and_format_parameter(vault_server: VaultProcess) -> None:
    client = api_client(vault_server.url)
    root = _xml(client.get("/objects/documents/999999", headers=XML))
    assert root.findtext("responseStatus") == "FAILURE"
    assert root.findtext("errors/type") == "INVALID_DOCUMENT"
    # format wins over Accept, both ways.
    assert_ok(client.get("/metadata/objects", params={"format": "json"}, headers=XML))
    root = _xml(client.get("/metadata/objects", params={"format": "xml"}))
    assert root.findtext("values/documents", "").endswith("/metadata/objects/documents/types")
    # Accept lists, quality values; unknown types mean JSON.
    both = {"Accept": "application/json;q=0.5, application/xml"}
    assert _xml(client.get("/metadata/objects", headers=both)) is not None
    assert_ok(client.get("/metadata/objects", headers={"Accept": "image/png, */*"}))
    # text/csv is honoured only where the spec lists it: JSON elsewhere.
    assert_ok(client.get("/metadata/objects", headers={"Accept": "text/csv"}))


def test_downloads_ignore_accept_except_for_errors(vault_server: VaultProcess) -> None:
    client = api_client(vault_server.url)
    doc_id = assert_ok(client.get("/objects/documents", params={"limit": 1}))["documents"][0][
        "document"
    ]["id"]
    ok = client.get(f"/objects/documents/{doc_id}/file", headers=XML)
    assert ok.status_code == 200
    assert ok.headers["content-type"].startswith("application/octet-stream")
    assert not ok.content.startswith(b"<?xml")
    missing = client.get("/objects/documents/999999/file", headers=XML)
    assert _xml(missing).findtext("errors/type") == "INVALID_DOCUMENT"
    assert_error(client.get("/objects/documents/999999/file"), "INVALID_DOCUMENT", 404)


def test_xml_renderer_shapes() -> None:
    body = {
        "responseStatus": "SUCCESS",
        "flag": True,
        "empty": None,
        "nested": {"a": [1, 2], "3d": "x", "xmlish": "y"},
        "text": "bad \x01 char & <tag>",
    }
    root = ET.fromstring(to_xml(body))
    assert root.findtext("flag") == "true"
    assert root.find("empty") is not None and root.findtext("empty") == ""
    assert [e.text for e in root.findall("nested/a")] == ["1", "2"]
    # Keys that are not XML names keep their name in an attribute.
    entries = {e.get("name"): e.text for e in root.findall("nested/entry")}
    assert entries == {"3d": "x", "xmlish": "y"}
    assert root.findtext("text") == "bad \ufffd char & <tag>"


def test_csv_renderer() -> None:
    rows = [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "note": 'say "hi"', "ok": False}]
    lines = to_csv(rows).decode().splitlines()
    assert lines == ["id,tags,note,ok", '1,"a,b",,', '2,,"say ""hi""",false']


async def _with_rows(request: Request) -> Response:
    return render(request, {"responseStatus": "SUCCESS", "data": [{"id": 7}]}, csv_rows=[{"id": 7}])


async def _boom(request: Request) -> Response:
    raise RuntimeError("internal")


def _app(tmp_path: Path) -> Starlette:
    app = Starlette(
        routes=[Route("/rows", _with_rows), Route("/boom", _boom)],
        middleware=[Middleware(ApiMiddleware)],
    )
    app.state.vault = VaultState(
        config=ServerConfig(data_dir=tmp_path),
        db=Database(tmp_path / "unused.sqlite3"),
        blobs=BlobStore(tmp_path / "blobs"),
        limiter=RateLimiter(10, 100),
    )
    return app


async def test_csv_hook_and_exception_stays_json(tmp_path: Path) -> None:
    transport = httpx.ASGITransport(app=_app(tmp_path))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        csv = await client.get("/rows", headers={"Accept": "text/csv"})
        assert csv.headers["content-type"].startswith("text/csv")
        assert csv.text.splitlines() == ["id", "7"]
        as_json = await client.get("/rows")
        assert as_json.json()["data"] == [{"id": 7}]
        as_xml = await client.get("/rows", params={"format": "xml"}, headers={"Accept": "text/csv"})
        assert ET.fromstring(as_xml.content).findtext("data/id") == "7"
        boom = await client.get("/boom", headers=XML)
        assert boom.status_code == 500
        assert boom.headers["content-type"].startswith("application/json")
        assert boom.json()["responseStatus"] == "EXCEPTION"
