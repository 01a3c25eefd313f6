"""Document events over real HTTP: metadata, logging (validation), reading with filters."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import EDITOR, VIEWER
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from vaultfs.testing.vault_process import VaultProcess

META = "/metadata/objects/documents/events"
EMAIL = {
    "event_type__v": "Distribution",
    "event_subtype__v": "approved_email__v",
    "classification__v": "Sent",
    "recipient_email__v": "a@example.com",
}


@pytest.fixture
def client(vault_server: VaultProcess) -> httpx.Client:
    return api_client(vault_server.url, EDITOR)


@pytest.fixture
def doc(client: httpx.Client) -> int:
    fields = {"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": "ev"}
    return int(assert_ok(upload(client, "/objects/documents", fields, "e.txt", b"e"))["id"])


def test_metadata(client: httpx.Client, vault_server: VaultProcess) -> None:
    body = assert_ok(client.get(META))
    [event] = body["events"]
    assert event["name"] == "distribution__v"
    subtypes = {s["name"] for s in event["subtypes"]}
    assert subtypes == {"approved_email__v", "controlled_copy__v", "irep__v", "engage__v"}
    assert all(s["value"].endswith(f"/types/{s['name']}") for s in event["subtypes"])
    one = assert_ok(client.get(META + "/distribution__v"))
    assert one["name"] == "distribution__v" and len(one["subtypes"]) == 4
    sub = assert_ok(client.get(META + "/distribution__v/types/approved_email__v"))
    names = {p["name"]: p for p in sub["properties"]}
    assert names["recipient_email__v"]["required"] is True
    assert names["classification__v"]["values"] == ["sent__v", "opened__v", "clicked__v"]
    assert_error(client.get(META + "/nope__v"), "METHOD_NOT_SUPPORTED", 405)
    assert_error(client.get(META + "/distribution__v/types/nope"), "METHOD_NOT_SUPPORTED")
    # The viewer may not log events: no event types for them.
    viewer = api_client(vault_server.url, VIEWER)
    assert assert_ok(viewer.get(META))["events"] == []
    assert_error(viewer.get(META + "/distribution__v"), "METHOD_NOT_SUPPORTED")


def test_log_and_read(client: httpx.Client, doc: int) -> None:
    url = f"/objects/documents/{doc}/versions/0/1/events"
    assert_ok(client.post(url, data=EMAIL))
    copy = {
        "event_type__v": "distribution__v",
        "event_subtype__v": "Controlled Copy",
        "classification__v": "issued__v",
        "copy_number__v": "3",
        "event_date__v": "2030-01-02T03:04:05Z",
    }
    assert_ok(client.post(url, data=copy))
    crm = {
        "event_type__v": "distribution__v",
        "event_subtype__v": "irep__v",
        "classification__v": "presented__v",
        "account_id__v": "acc-1",
        "key_message__v": "false",
    }
    assert_ok(client.post(url, data=crm))
    events = assert_ok(client.get(f"/objects/documents/{doc}/events"))["events"]
    assert [e["event_subtype__v"] for e in events] == [
        "approved_email__v",
        "irep__v",
        "controlled_copy__v",
    ]
    assert events[0]["recipient_email__v"] == "a@example.com"
    assert events[0]["document_version_id__v"] == f"{doc}_0_1"
    # false and null properties are omitted
    assert "key_message__v" not in events[1] and "duration__v" not in events[1]
    assert events[2]["copy_number__v"] == 3
    assert events[2]["event_date__v"] == "2030-01-02T03:04:05.000Z"
    # filters: property values (labels or names), dates, paging
    base = f"/objects/documents/{doc}/events"
    by_subtype = assert_ok(client.get(base, params={"event_subtype__v": "CRM"}))["events"]
    assert [e["event_subtype__v"] for e in by_subtype] == ["irep__v"]
    later = assert_ok(client.get(base, params={"startDate": "2030-01-01"}))["events"]
    assert [e["event_subtype__v"] for e in later] == ["controlled_copy__v"]
    earlier = assert_ok(client.get(base, params={"endDate": "2030-01-01T00:00:00Z"}))["events"]
    assert len(earlier) == 2
    page = assert_ok(client.get(base, params={"limit": 1, "start": 1}))
    assert [e["event_subtype__v"] for e in page["events"]] == ["irep__v"]
    assert page["responseDetails"]["total"] == 3
    assert assert_ok(client.get(base, params={"recipient_email__v": "x"}))["events"] == []
    assert_error(client.get(base, params={"limit": "0"}), "INVALID_DATA")
    assert_error(client.get(base, params={"startDate": "soon"}), "INVALID_DATA")


def test_log_errors(client: httpx.Client, doc: int, vault_server: VaultProcess) -> None:
    url = f"/objects/documents/{doc}/versions/0/1/events"
    body = assert_error(
        client.post(
            url, data={"event_type__v": "distribution__v", "event_subtype__v": "approved_email__v"}
        ),
        "PARAMETER_REQUIRED",
        400,
    )
    # every missing property is listed
    messages = " ".join(e["message"] for e in body["errors"])
    assert "classification__v" in messages and "recipient_email__v" in messages
    assert len(body["errors"]) == 2
    bad = {**EMAIL, "classification__v": "Shredded", "nonsense__v": "1"}
    body = assert_error(client.post(url, data=bad), "INVALID_DATA", 400)
    messages = " ".join(e["message"] for e in body["errors"])
    assert "classification__v" in messages and "nonsense__v" in messages
    copy = {
        **EMAIL,
        "event_subtype__v": "controlled_copy__v",
        "classification__v": "issued__v",
        "copy_number__v": "many",
    }
    copy.pop("recipient_email__v")
    assert_error(client.post(url, data=copy), "INVALID_DATA", mentions="copy_number__v")
    assert_error(
        client.post(url, data={**EMAIL, "event_type__v": "party__v"}), "METHOD_NOT_SUPPORTED", 405
    )
    assert_error(
        client.post(f"/objects/documents/{doc}/versions/5/5/events", data=EMAIL), "INVALID_DOCUMENT"
    )
    viewer = api_client(vault_server.url, VIEWER)
    assert_error(viewer.post(url, data=EMAIL), "INSUFFICIENT_ACCESS", 403)
    assert assert_ok(client.get(f"/objects/documents/{doc}/events"))["events"] == []
