"""Bulk CSV over real HTTP: create, update, import versions and renditions, delete versions."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import httpx
import pytest

from tests.conftest import EDITOR, VIEWER
from tests.server.backends import run_sql
from tests.server.helpers import api_client, assert_error, assert_ok
from tests.server.versioned import at_version
from vaultfs.testing.vault_process import VaultProcess

#: Files are what these tests are about: they run with the files in a bucket too.
pytestmark = pytest.mark.content_stores

CSV = {"Content-Type": "text/csv"}
MIGRATE = {**CSV, "X-VaultAPI-MigrationMode": "true"}


@pytest.fixture
def client(vault_server: VaultProcess) -> httpx.Client:
    return api_client(vault_server.url, EDITOR)


@pytest.fixture
def admin(vault_server: VaultProcess) -> httpx.Client:
    return api_client(vault_server.url)


def table(*rows: list[str]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


def create(client: httpx.Client, *names: str, external: str = "") -> list[int]:
    rows = [["name__v", "type__v", "lifecycle__v", "external_id__v"]]
    rows += [
        [n, "General", "General Lifecycle", f"{external}{n}" if external else ""] for n in names
    ]
    data = assert_ok(client.post("/objects/documents/batch", content=table(*rows), headers=CSV))
    assert all(r["responseStatus"] == "SUCCESS" for r in data["data"]), data
    return [r["id"] for r in data["data"]]


def test_create_rows_in_order_with_failures(client: httpx.Client) -> None:
    body = table(
        ["name__v", "type__v", "lifecycle__v", "title__v"],
        ["One", "General", "General Lifecycle", "t1"],
        ["Two", "Nope", "General Lifecycle", ""],
        ["Three", "Clinical", "General Lifecycle", ""],
        ["Four", "General", "General Lifecycle", "t4"],
    )
    data = assert_ok(client.post("/objects/documents/batch", content=body, headers=CSV))["data"]
    assert [r["responseStatus"] for r in data] == ["SUCCESS", "FAILURE", "FAILURE", "SUCCESS"]
    assert data[1]["errors"][0]["type"] == "INVALID_DATA"
    assert data[2]["errors"][0]["type"] == "PARAMETER_REQUIRED"
    doc = assert_ok(client.get(f"/objects/documents/{data[3]['id']}"))["document"]
    assert doc["name__v"] == "Four" and doc["title__v"] == "t4"
    # CSV answer on request
    r = client.post("/objects/documents/batch", content=body, headers={**CSV, "Accept": "text/csv"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [row["responseStatus"] for row in rows] == ["SUCCESS", "FAILURE", "FAILURE", "SUCCESS"]
    assert "INVALID_DATA" in rows[1]["errors"]


def test_input_limits_and_errors(client: httpx.Client, vault_server: VaultProcess) -> None:
    url = "/objects/documents/batch"
    assert_error(
        client.post(url, content=b"a,b\n1,2\n", headers={"Content-Type": "application/json"}),
        "INVALID_DATA",
        mentions="Content-Type",
    )
    assert_error(client.post(url, content=b"", headers=CSV), "INVALID_DATA")
    assert_error(
        client.post(url, content=b"name__v\n\xff\xfe\n", headers=CSV),
        "INVALID_DATA",
        mentions="UTF-8",
    )
    assert_error(client.post(url, content=b'name__v\n"unterminated\n', headers=CSV), "INVALID_DATA")
    too_many = table(["name__v"], *[[f"n{i}"] for i in range(501)])
    assert_error(client.post(url, content=too_many, headers=CSV), "INVALID_DATA", mentions="500")
    viewer = api_client(vault_server.url, VIEWER)
    assert_error(
        viewer.post(url, content=table(["name__v"], ["x"]), headers=CSV), "INSUFFICIENT_ACCESS", 403
    )
    old = at_version(client, "v8.0").post(url, content=table(["name__v"], ["x"]), headers=CSV)
    assert_error(old, "MALFORMED_URL", 404)


def test_update_csv_and_form(client: httpx.Client) -> None:
    a, b = create(client, "UpA", "UpB")
    body = table(
        ["id", "title__v", "description__v"],
        [str(a), "new title", "null"],
        [str(b), "", "described"],
        ["999999", "x", ""],
        [str(a), "", ""],
    )
    data = assert_ok(client.put("/objects/documents/batch", content=body, headers=CSV))["data"]
    assert [r["responseStatus"] for r in data] == ["SUCCESS", "SUCCESS", "FAILURE", "FAILURE"]
    assert data[2]["errors"][0]["type"] == "INVALID_DATA"
    doc_a = assert_ok(client.get(f"/objects/documents/{a}"))["document"]
    doc_b = assert_ok(client.get(f"/objects/documents/{b}"))["document"]
    assert doc_a["title__v"] == "new title" and doc_a["description__v"] is None
    assert doc_b["description__v"] == "described" and doc_b["title__v"] is None
    form = {"docIds": f"{a},{b}", "title__v": "same"}
    data = assert_ok(client.put("/objects/documents/batch", data=form))["data"]
    assert [r["id"] for r in data] == [a, b]
    for doc_id in (a, b):
        assert (
            assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]["title__v"] == "same"
        )
    too_many = table(["id", "title__v"], *[[str(a), "x"] for _ in range(1001)])
    assert_error(
        client.put("/objects/documents/batch", content=too_many, headers=CSV),
        "INVALID_DATA",
        mentions="1000",
    )


def test_versions_and_renditions_need_migration_mode(
    admin: httpx.Client, client: httpx.Client, vault_server: VaultProcess
) -> None:
    [doc] = create(admin, "Mig", external="ext-")
    staging = vault_server.data_dir / "staging"
    (staging / "in").mkdir(parents=True, exist_ok=True)
    (staging / "in" / "v2.txt").write_bytes(b"version two of the migrated text\n")
    (staging / "in" / "r.pdf").write_bytes(b"%PDF-1.4 rendition")
    rows = table(
        [
            "external_id__v",
            "file",
            "major_version_number__v",
            "minor_version_number__v",
            "status__v",
            "name__v",
            "title__v",
        ],
        ["ext-Mig", "/in/v2.txt", "2", "0", "Approved", "Mig v2", "imported"],
        ["ext-Mig", "in/v2.txt", "0", "1", "", "", ""],
        ["ext-Mig", "../../vault.sqlite3", "3", "0", "", "", ""],
        ["ext-nope", "", "3", "0", "", "", ""],
    )
    url = "/objects/documents/versions/batch?idParam=external_id__v"
    assert_error(admin.post(url, content=rows, headers=CSV), "OPERATION_NOT_ALLOWED", 409)
    assert_error(client.post(url, content=rows, headers=MIGRATE), "INSUFFICIENT_ACCESS", 403)
    data = assert_ok(admin.post(url, content=rows, headers=MIGRATE))["data"]
    assert [r["responseStatus"] for r in data] == ["SUCCESS", "FAILURE", "FAILURE", "FAILURE"]
    assert (data[0]["major_version_number__v"], data[0]["minor_version_number__v"]) == (2, 0)
    assert "exists" in data[1]["errors"][0]["message"]
    assert "staging" in data[2]["errors"][0]["message"]
    latest = assert_ok(admin.get(f"/objects/documents/{doc}"))["document"]
    assert (latest["major_version_number__v"], latest["status__v"]) == (2, "Approved")
    assert latest["name__v"] == "Mig v2" and latest["filename__v"] == "v2.txt"
    file = admin.get(f"/objects/documents/{doc}/versions/2/0/file")
    assert file.content == b"version two of the migrated text\n"
    renditions = table(
        ["id", "file", "rendition_type__v", "major_version_number__v", "minor_version_number__v"],
        [str(doc), "in/r.pdf", "imported_rendition__c", "2", "0"],
        [str(doc), "in/r.pdf", "bogus__c", "2", "0"],
        [str(doc), "", "imported_rendition__c", "2", "0"],
    )
    data = assert_ok(
        admin.post("/objects/documents/renditions/batch", content=renditions, headers=MIGRATE)
    )["data"]
    assert [r["responseStatus"] for r in data] == ["SUCCESS", "FAILURE", "FAILURE"]
    assert data[0]["rendition_type__v"] == "imported_rendition__c"
    got = admin.get(f"/objects/documents/{doc}/versions/2/0/renditions/imported_rendition__c")
    assert got.content == b"%PDF-1.4 rendition"


def test_delete_versions_csv_and_json(admin: httpx.Client, client: httpx.Client) -> None:
    [doc] = create(admin, "DelV")
    for _ in range(2):
        draft = admin.post(f"/objects/documents/{doc}", files={"file": ("d.txt", b"draft")})
        assert_ok(draft)
    url = "/objects/documents/versions/batch"
    rows = table(
        ["id", "major_version_number__v", "minor_version_number__v"],
        [str(doc), "0", "3"],
        [str(doc), "9", "9"],
    )
    assert_error(client.request("DELETE", url, content=rows, headers=CSV), "INSUFFICIENT_ACCESS")
    data = assert_ok(admin.request("DELETE", url, content=rows, headers=CSV))["data"]
    assert [r["responseStatus"] for r in data] == ["SUCCESS", "FAILURE"]
    assert data[1]["errors"][0]["type"] == "INVALID_DATA"
    body = b'[{"id": %d, "major_version_number__v": 0, "minor_version_number__v": 2}]' % doc
    data = assert_ok(
        admin.request("DELETE", url, content=body, headers={"Content-Type": "application/json"})
    )["data"]
    assert data == [
        {
            "responseStatus": "SUCCESS",
            "id": doc,
            "major_version_number__v": 0,
            "minor_version_number__v": 2,
        }
    ]
    versions = assert_ok(admin.get(f"/objects/documents/{doc}/versions"))["versions"]
    assert [v["number"] for v in versions] == ["0.1"]


def test_migration_mode_vault_setting(fresh_vault: VaultProcess) -> None:
    """The vault setting (set by an admin in the database) spares the header."""
    admin = api_client(fresh_vault.url)
    rows = table(["id", "major_version_number__v", "minor_version_number__v"], ["1", "5", "0"])
    url = "/objects/documents/versions/batch"
    assert_error(admin.post(url, content=rows, headers=CSV), "OPERATION_NOT_ALLOWED")
    run_sql(fresh_vault, "INSERT INTO vault_settings VALUES (1, 'migration_mode', 'true')")
    data = assert_ok(admin.post(url, content=rows, headers=CSV))["data"]
    assert data[0]["responseStatus"] == "SUCCESS", data


def test_migration_mode_server_flag(tmp_path: Path) -> None:
    """``vaultfs serve --migration-mode`` accepts imports without the header."""
    rows = table(["id", "major_version_number__v", "minor_version_number__v"], ["1", "6", "0"])
    with VaultProcess(tmp_path / "data", extra_args=["--migration-mode"]) as server:
        admin = api_client(server.url)
        data = assert_ok(admin.post("/objects/documents/versions/batch", content=rows, headers=CSV))
        assert data["data"][0]["responseStatus"] == "SUCCESS", data
