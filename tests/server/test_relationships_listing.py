"""The cross-document relationship listing (an extension): pages, visibility, route order."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import VIEWER
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from tests.server.versioned import at_version
from vaultfs.testing.vault_process import VaultProcess

GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}
ALL = "/objects/documents/relationships"


def new_doc(client: httpx.Client, name: str, **extra: str) -> int:
    fields = {**GENERAL, "name__v": name, **extra}
    return int(assert_ok(upload(client, "/objects/documents", fields, "r.txt", b"x"))["id"])


def relate(client: httpx.Client, source: int, target: int, type_: str = "references__vs") -> int:
    form = {"target_doc_id__v": str(target), "relationship_type__v": type_}
    path = f"/objects/documents/{source}/versions/0/1/relationships"
    return int(assert_ok(client.post(path, data=form))["id"])


def every(client: httpx.Client, limit: int) -> tuple[list[dict[str, Any]], list[int]]:
    """All records, paging with ``limit``; and the size of each page."""
    records: list[dict[str, Any]] = []
    sizes: list[int] = []
    while True:
        body = assert_ok(client.get(ALL, params={"start": len(records), "limit": limit}))
        page = [r["relationship"] for r in body["relationships"]]
        assert body["responseDetails"]["size"] == len(page)
        sizes.append(len(page))
        records += page
        if len(records) >= body["responseDetails"]["total"]:
            return records, sizes


def test_pages_every_visible_relationship(fresh_vault: VaultProcess) -> None:
    admin, viewer = api_client(fresh_vault.url), api_client(fresh_vault.url, VIEWER)
    demo = [r["id"] for r in every(admin, limit=200)[0]]
    assert len(demo) == 3  # the demo vault's own
    a, b, c = (new_doc(admin, f"rel {n}") for n in "abc")
    # Only the editor (user 2) is named: the viewer may not see this one.
    secret = new_doc(admin, "rel secret", **{"viewer__v.users": "2"})
    made = [relate(admin, a, b), relate(admin, b, c), relate(admin, c, a)]
    hidden = [relate(admin, a, secret), relate(admin, secret, b)]
    records, sizes = every(admin, limit=2)
    assert [r["id"] for r in records] == demo + sorted(made + hidden)
    assert sizes == [2, 2, 2, 2]
    first = next(r for r in records if r["id"] == made[0])
    assert (first["source_doc_id__v"], first["target_doc_id__v"]) == (a, b)
    assert (first["source_major_version__v"], first["source_minor_version__v"]) == (0, 1)
    assert first["relationship_type__v"] == "references__vs"
    assert "target_major_version__v" not in first
    # A relationship naming a document the caller may not see is left out, and counted out.
    seen, _ = every(viewer, limit=200)
    assert [r["id"] for r in seen] == demo + made
    # Deleting removes it from the listing.
    assert_ok(admin.delete(f"/objects/documents/{b}/versions/0/1/relationships/{made[1]}"))
    assert made[1] not in {r["id"] for r in every(admin, limit=200)[0]}


def test_paging_parameters_and_route(fresh_vault: VaultProcess) -> None:
    admin = api_client(fresh_vault.url)
    body = assert_ok(admin.get(ALL, params={"limit": 5000, "start": 10**30}))
    assert body["responseDetails"]["limit"] == 1000 and body["relationships"] == []
    assert assert_ok(admin.get(ALL))["responseDetails"]["limit"] == 200
    assert_error(admin.get(ALL, params={"limit": 0}), "INVALID_DATA")
    # Not a document id: a write to the same path is still the document routes' (no id).
    assert_error(admin.post(ALL, data={}), "MALFORMED_URL")
    # Relationships came with v3, and so did this listing.
    assert_error(at_version(admin, "v2.0").get(ALL), "MALFORMED_URL", 404)
