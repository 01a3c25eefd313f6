"""Property-based: random field values, names and CSV rows never give a 5xx and never
leave a half-written record (one server for all examples)."""

from __future__ import annotations

import csv
import io

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import EDITOR
from tests.server.helpers import api_client
from vaultfs.testing.vault_process import VaultProcess

SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=120)
FIELD_NAMES = st.sampled_from(
    [
        "name__v",
        "title__v",
        "type__v",
        "subtype__v",
        "lifecycle__v",
        "study_number__c",
        "language__v",
        "major_version_number__v",
        "status__v",
        "external_id__v",
        "viewer__v.users",
        "source_document_id__v",
    ]
)


@pytest.fixture(scope="module")
def client(vault_server: VaultProcess) -> httpx.Client:
    return api_client(vault_server.url, EDITOR)


def total(client: httpx.Client) -> int:
    return int(
        client.get("/objects/documents", params={"limit": 1}).json()["responseDetails"]["total"]
    )


@SETTINGS
@given(
    name=TEXT,
    extra=st.dictionaries(st.one_of(FIELD_NAMES, TEXT.filter(bool)), TEXT, max_size=4),
)
def test_create_is_whole_or_nothing(client: httpx.Client, name: str, extra: dict[str, str]) -> None:
    fields = {"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": name, **extra}
    before = total(client)
    r = client.post("/objects/documents", data=fields, files={"file": ("f.txt", b"x")})
    assert r.status_code < 500, r.text
    body = r.json()
    if body["responseStatus"] == "SUCCESS":
        doc = client.get(f"/objects/documents/{body['id']}").json()["document"]
        assert doc["name__v"] == fields["name__v"] or not fields["name__v"]
        assert total(client) == before + 1
    else:
        assert r.status_code >= 400 and body["errors"]
        assert total(client) == before


ROW = st.lists(TEXT, min_size=0, max_size=5)


@SETTINGS
@given(
    header=st.lists(st.one_of(FIELD_NAMES, TEXT), min_size=1, max_size=5, unique=True),
    rows=st.lists(ROW, min_size=1, max_size=5),
)
def test_bulk_rows_each_whole_or_nothing(
    client: httpx.Client, header: list[str], rows: list[list[str]]
) -> None:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for row in rows:
        writer.writerow((row + [""] * len(header))[: len(header)])
    before = total(client)
    r = client.post(
        "/objects/documents/batch",
        content=out.getvalue().encode(),
        headers={"Content-Type": "text/csv"},
    )
    assert r.status_code < 500, r.text
    body = r.json()
    if body["responseStatus"] != "SUCCESS":
        assert total(client) == before
        return
    made = [item for item in body["data"] if item["responseStatus"] == "SUCCESS"]
    for item in body["data"]:
        assert item["responseStatus"] == "SUCCESS" or item["errors"]
    assert total(client) == before + len(made)
    for item in made:
        assert client.get(f"/objects/documents/{item['id']}").json()["responseStatus"] == "SUCCESS"


@SETTINGS
@given(
    properties=st.dictionaries(
        st.one_of(
            st.sampled_from(
                [
                    "event_type__v",
                    "event_subtype__v",
                    "classification__v",
                    "copy_number__v",
                    "recipient_email__v",
                    "event_date__v",
                    "key_message__v",
                ]
            ),
            TEXT.filter(bool),
        ),
        TEXT,
        max_size=6,
    )
)
def test_events_never_fail_badly(client: httpx.Client, properties: dict[str, str]) -> None:
    url = "/objects/documents/1/events"
    before = client.get(url).json()["responseDetails"]["total"]
    r = client.post("/objects/documents/1/versions/1/0/events", data=properties)
    assert r.status_code < 500, r.text
    after = client.get(url).json()["responseDetails"]["total"]
    assert after == before + (1 if r.json()["responseStatus"] == "SUCCESS" else 0)
