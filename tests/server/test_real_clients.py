"""What the real clients of the service send, request by request (issue: "the local
vault serves the real clients of the service as they are").

veevatools (PyPI, also run whole in ``test_client_veevatools``), Veeva's Java library
VAPIL and the vendor's Postman collection send a few things the spec does not list;
each test below is one of them, at the HTTP level.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD, login
from tests.server.helpers import api_client, assert_error, assert_ok
from vaultfs.client._budget import BudgetMeter
from vaultfs.testing.vault_process import VaultProcess

GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}
TOO_BIG = str(2**63)


@pytest.fixture(scope="module")
def client(vault_server: VaultProcess) -> httpx.Client:
    return api_client(vault_server.url)


def _doc(client: httpx.Client, name: str = "rc") -> int:
    r = client.post(
        "/objects/documents", data={**GENERAL, "name__v": name}, files={"file": ("a.txt", b"a")}
    )
    doc_id: int = assert_ok(r)["id"]
    return doc_id


# --- 1, 2: versions and sessions ------------------------------------------------------


@pytest.mark.parametrize("label", ["v26.3", "v27.1", "v99.0"])
def test_login_at_any_well_formed_version(vault_server: VaultProcess, label: str) -> None:
    r = httpx.post(
        f"{vault_server.url}/api/{label}/auth",
        data={"username": ADMIN, "password": DEMO_PASSWORD},
    )
    assert assert_ok(r)["sessionId"]


def test_other_paths_need_a_served_version(vault_server: VaultProcess) -> None:
    session = login(vault_server.url)
    r = httpx.get(
        f"{vault_server.url}/api/v99.0/objects/documents", headers={"Authorization": session}
    )
    assert_error(r, "MALFORMED_URL", 404, mentions="v99.0")
    r = httpx.post(f"{vault_server.url}/api/latest/auth", data={"username": ADMIN})
    assert_error(r, "MALFORMED_URL", 404)


def test_newest_listed_version_is_the_current_release(vault_server: VaultProcess) -> None:
    labels = list(assert_ok(httpx.get(vault_server.url + "/api/"))["values"])
    assert labels[-1] == "v26.3"  # the beta, last (the spec's version list)
    assert labels[-2] == "v26.2"


@pytest.mark.parametrize("suffix", ["", "/"])
def test_version_map_at_the_version_path_validates_the_session(
    vault_server: VaultProcess, suffix: str
) -> None:
    # VAPIL's retrieveApiVersions() and validateSession(): no redirect, the map itself.
    url = f"{vault_server.url}/api/v25.1{suffix}"
    session = login(vault_server.url)
    r = httpx.get(url, headers={"Authorization": session})
    assert r.status_code == 200 and "location" not in r.headers
    assert "v25.1" in assert_ok(r)["values"]
    assert_error(httpx.get(url, headers={"Authorization": "expired"}), "INVALID_SESSION_ID", 401)


def test_trailing_slashes_answer_directly(client: httpx.Client) -> None:
    r = client.get("/objects/documents/", params={"limit": 1})
    assert r.status_code == 200 and assert_ok(r)["size"] == 1
    assert_error(client.get("/no/such/path/"), "MALFORMED_URL", 404)


# --- 3, 4, 5: bodies ------------------------------------------------------------------


def test_reclassify_in_the_form_body(client: httpx.Client) -> None:
    # The vendor's Postman collection sends reclassify=true in the body.
    doc_id = _doc(client)
    body = {
        "reclassify": "true",
        "type__v": "Promotional Piece",
        "subtype__v": "Advertisement",
        "lifecycle__v": "General Lifecycle",
    }
    assert_ok(client.put(f"/objects/documents/{doc_id}", data=body))
    record = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    assert record["subtype__v"] == "Advertisement"
    bad = client.put(f"/objects/documents/{doc_id}", data={**body, "reclassify": "maybe"})
    assert_error(bad, "INVALID_DATA", mentions="reclassify")


def _multipart(fields: dict[str, str], file: bytes | None = None) -> bytes:
    """A multipart body with the boundary ``b0und`` (which the header will not name)."""
    parts = [f'Content-Disposition: form-data; name="{n}"\r\n\r\n{v}' for n, v in fields.items()]
    body = b"".join(b"--b0und\r\n" + part.encode() + b"\r\n" for part in parts)
    if file is not None:
        body += b'--b0und\r\nContent-Disposition: form-data; name="file"; filename="d.txt"\r\n'
        body += b"Content-Type: text/plain\r\n\r\n" + file + b"\r\n"
    return body + b"--b0und--\r\n"


NO_BOUNDARY = {"Content-Type": "multipart/form-data"}


def test_multipart_without_a_boundary_parameter(client: httpx.Client) -> None:
    # veevatools: Content-Type "multipart/form-data" with no boundary, multipart body.
    body = _multipart({**GENERAL, "name__v": "no boundary"}, b"hi")
    doc_id = assert_ok(client.post("/objects/documents", content=body, headers=NO_BOUNDARY))["id"]
    assert client.get(f"/objects/documents/{doc_id}/file").content == b"hi"
    body = _multipart({**GENERAL, "name__v": "placeholder"})
    assert assert_ok(client.post("/objects/documents", content=body, headers=NO_BOUNDARY))["id"]
    # ... and with a url-encoded body (its draft request without a file)
    draft = client.post(
        f"/objects/documents/{doc_id}",
        content=b"createDraft=latestContent",
        headers=NO_BOUNDARY,
    )
    assert assert_ok(draft)["minor_version_number__v"] == 2


def test_json_bodies_and_unsuffixed_relationship_fields(client: httpx.Client) -> None:
    source, target = _doc(client, "json source"), _doc(client, "json target")
    url = f"/objects/documents/{source}/versions/0/1/relationships"
    body = {"target_doc_id": target, "relationship_type": "references__vs"}
    rel = assert_ok(client.post(url, json=body))["id"]
    listed = assert_ok(client.get(url))["relationships"]
    assert rel in {r["relationship"]["id"] for r in listed}
    # a JSON field update; and JSON under a url-encoded Content-Type
    assert_ok(client.put(f"/objects/documents/{source}", json={"title__v": "from json"}))
    sneaky = client.put(
        f"/objects/documents/{source}",
        content=json.dumps({"title__v": "json as form"}),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert_ok(sneaky)
    record = assert_ok(client.get(f"/objects/documents/{source}"))["document"]
    assert record["title__v"] == "json as form"
    # nested objects are dotted form fields (role fields)
    assert_ok(client.post(f"/objects/documents/{source}/roles", json={"viewer__v": {"users": [2]}}))
    bad = client.post(url, content=b"[1, 2]", headers={"Content-Type": "application/json"})
    assert_error(bad, "INVALID_DATA", mentions="JSON")
    empty = client.post(url, headers={"Content-Type": "application/json"})
    assert_error(empty, "PARAMETER_REQUIRED", 400)


# --- 6: headers -------------------------------------------------------------------------


def test_remaining_call_headers_under_both_names(client: httpx.Client) -> None:
    r = client.get("/objects/documents", params={"limit": 1})
    for kind in ("Burst", "Daily"):
        spec = r.headers[f"X-ServiceAPI-{kind}LimitRemaining"]
        assert spec.isdigit() and r.headers[f"X-VaultAPI-{kind}LimitRemaining"] == spec


def test_the_bridge_reads_either_header_form() -> None:
    # Kept beside the server's half of item 6: the bridge's budget takes either name.
    meter = BudgetMeter(burst_window=300)
    meter.observe({"X-VaultAPI-BurstLimitRemaining": "17", "X-VaultAPI-DailyLimitRemaining": "99"})
    assert (meter.budget.burst_remaining, meter.budget.daily_remaining) == (17, 99)
    both = {"X-ServiceAPI-BurstLimitRemaining": "5", "X-VaultAPI-BurstLimitRemaining": "6"}
    meter.observe(both)
    assert meter.budget.burst_remaining == 5  # the spec's name wins


# --- 7: numbers that cannot exist --------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "error_type"),
    [
        ("/objects/documents/-1", "INVALID_DOCUMENT"),
        (f"/objects/documents/{TOO_BIG}", "INVALID_DOCUMENT"),
        (f"/objects/documents/{'9' * 5000}", "INVALID_DOCUMENT"),
        (f"/objects/documents/1/versions/{TOO_BIG}/0", "INVALID_DOCUMENT"),
        (f"/objects/documents/1/versions/0/{TOO_BIG}/file", "INVALID_DOCUMENT"),
        (f"/objects/documents/1/attachments/{TOO_BIG}", "MALFORMED_URL"),
        (f"/objects/documents/1/versions/0/1/relationships/{TOO_BIG}", "MALFORMED_URL"),
        (f"/objects/groups/{TOO_BIG}", "MALFORMED_URL"),
        ("/objects/documents/abc", "MALFORMED_URL"),
    ],
)
def test_path_numbers_that_cannot_exist(client: httpx.Client, path: str, error_type: str) -> None:
    r = client.get(path)
    assert_error(r, error_type, 404)
    assert len(r.text) < 1000  # the message shows a bounded part of the value


def test_numbers_beyond_64_bits_in_queries_and_bodies(client: httpx.Client) -> None:
    page = assert_ok(client.get("/objects/documents", params={"start": TOO_BIG}))
    assert page["documents"] == [] and page["responseDetails"]["total"] > 0
    events = assert_ok(client.get("/objects/documents/1/events", params={"limit": TOO_BIG}))
    assert events["responseDetails"]["limit"] == 200  # capped, as the document list
    doc_id = _doc(client)
    url = f"/objects/documents/{doc_id}/versions/0/1/relationships"
    rel = {"target_doc_id__v": TOO_BIG, "relationship_type__v": "references__vs"}
    assert_error(client.post(url, data=rel), "INVALID_DATA", 400, mentions="target_doc_id__v")
    create = {**GENERAL, "name__v": "big", "major_version_number__v": TOO_BIG}
    assert_error(client.post("/objects/documents", data=create), "INVALID_DATA", 400)
    rows = f"id,title__v\n{TOO_BIG},x\n{doc_id},y\n".encode()
    data = assert_ok(
        client.put("/objects/documents/batch", content=rows, headers={"Content-Type": "text/csv"})
    )["data"]
    assert [r["responseStatus"] for r in data] == ["FAILURE", "SUCCESS"]
    assert data[0]["errors"][0]["type"] == "INVALID_DATA"


# --- 8: smaller ---------------------------------------------------------------------------


def test_unknown_lifecycle_action_is_method_not_supported(client: httpx.Client) -> None:
    doc_id = _doc(client)
    base = f"/objects/documents/{doc_id}/versions/0/1/lifecycle_actions/nope"
    assert_error(client.get(base + "/entry_requirements"), "METHOD_NOT_SUPPORTED", 405)
    assert_error(client.put(base), "METHOD_NOT_SUPPORTED", 405)


def test_bulk_row_with_too_few_cells_is_invalid_data(client: httpx.Client) -> None:
    rows = b"name__v,type__v,lifecycle__v\nshort,General\nfull,General,General Lifecycle\n"
    r = client.post("/objects/documents/batch", content=rows, headers={"Content-Type": "text/csv"})
    data = assert_ok(r)["data"]
    assert [d["responseStatus"] for d in data] == ["FAILURE", "SUCCESS"]
    assert data[0]["errors"][0]["type"] == "INVALID_DATA"


def test_deletions_refuse_dates_older_than_30_days(client: httpx.Client) -> None:
    url = "/objects/deletions/documents"
    assert_error(
        client.get(url, params={"start_date": "2020-01-01"}), "INVALID_DATA", mentions="start_date"
    )
    assert_error(client.get(url, params={"end_date": "2020-01-01T00:00:00Z"}), "INVALID_DATA")
    assert_ok(client.get(url))


# --- 9: the demo vault ------------------------------------------------------------------------


def test_demo_documents_ready_for_approve(fresh_vault: VaultProcess) -> None:
    client = api_client(fresh_vault.url)
    listed = assert_ok(client.get("/objects/documents", params={"search": "Release Checklist"}))
    record = listed["documents"][0]["document"]
    assert record["status__v"] == "Draft" and record["country__v"]
    base = f"/objects/documents/{record['id']}/versions/0/1/lifecycle_actions"
    assert assert_ok(client.put(base + "/approve"))["id"] == record["id"]
    after = assert_ok(client.get(f"/objects/documents/{record['id']}"))["document"]
    assert after["status__v"] == "Approved"
