"""The document list's pages, on both backends: a page at any offset is exactly the rows
of the full sorted read at that place, for an admin and for a user some documents are
hidden from, before and after the list changes (where pages begin is remembered by the
server and must never outlive a change)."""

from __future__ import annotations

import csv
import io
from typing import Any

import httpx

from tests.conftest import VIEWER
from tests.server.helpers import api_client, assert_ok, upload
from vaultfs.testing.vault_process import VaultProcess

CSV = {"Content-Type": "text/csv"}
SORTED = "version_modified_date__v desc"
#: documents made by the bulk create (bigger than a page, not a multiple of it)
COUNT = 530


def _bulk_create(client: httpx.Client, count: int) -> list[int]:
    """``count`` documents in batches of 500 (the limit); a batch's rows share one time."""
    made: list[int] = []
    for first in range(0, count, 500):
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["name__v", "type__v", "lifecycle__v"])
        writer.writerows(
            [f"Paged {n:04d}", "General", "General Lifecycle"]
            for n in range(first, min(count, first + 500))
        )
        body = assert_ok(
            client.post("/objects/documents/batch", content=out.getvalue().encode(), headers=CSV)
        )
        assert all(r["responseStatus"] == "SUCCESS" for r in body["data"]), body
        made += [int(r["id"]) for r in body["data"]]
    return made


def _page(client: httpx.Client, start: int, limit: int, sort: str | None) -> tuple[list[int], int]:
    params: dict[str, Any] = {"start": start, "limit": limit}
    if sort:
        params["sort"] = sort
    body = assert_ok(client.get("/objects/documents", params=params))
    return [d["document"]["id"] for d in body["documents"]], body["responseDetails"]["total"]


def _full(client: httpx.Client, sort: str | None) -> list[dict[str, Any]]:
    """Every record, read in pages from the start."""
    records: list[dict[str, Any]] = []
    while True:
        params: dict[str, Any] = {"start": len(records), "limit": 200}
        if sort:
            params["sort"] = sort
        body = assert_ok(client.get("/objects/documents", params=params))
        records += [d["document"] for d in body["documents"]]
        if len(records) >= body["responseDetails"]["total"] or not body["documents"]:
            return records


def _expected(records: list[dict[str, Any]], sort: str | None) -> list[int]:
    if sort is None:
        return sorted(r["id"] for r in records)
    return [
        r["id"]
        for r in sorted(
            records, key=lambda r: (r["version_modified_date__v"], r["id"]), reverse=True
        )
    ]


def _check_offsets(client: httpx.Client, sort: str | None) -> list[int]:
    """Pages at offsets out of order (the end first) equal slices of the full read."""
    full = _full(client, sort)
    order = [r["id"] for r in full]
    assert order == _expected(full, sort)
    assert len(set(order)) == len(order)
    total = len(order)
    for start, limit in [(total - 3, 200), (total - 200, 200), (317, 7), (0, 5), (318, 1),
                         (total, 10), (total - 200, 200), (1, 200)]:  # fmt: skip
        ids, reported = _page(client, start, limit, sort)
        assert reported == total
        assert ids == order[start : start + limit], (start, limit)
    return order


def test_pages_at_any_offset_are_the_full_sorted_read(fresh_vault: VaultProcess) -> None:
    admin = api_client(fresh_vault.url)
    viewer = api_client(fresh_vault.url, VIEWER)
    made = _bulk_create(admin, COUNT)
    # One document restricted to the editor: the viewer's pages and total leave it out.
    secret = assert_ok(
        upload(
            admin,
            "/objects/documents",
            {"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": "Secret",
             "viewer__v.users": "2"},
            "s.txt",
            b"secret\n",
        )
    )["id"]  # fmt: skip
    for sort in (None, SORTED):
        everything = _check_offsets(admin, sort)
        assert set(made) | {secret} <= set(everything)
        seen = _check_offsets(viewer, sort)
        assert seen == [i for i in everything if i != secret]
    # A change moves a document to the front of the sorted list: pages asked again at
    # the same offsets (whose starts the server knew) follow it at once.
    moved = made[100]
    assert_ok(admin.put(f"/objects/documents/{moved}", data={"title__v": "moved"}))
    assert _page(admin, 0, 1, SORTED)[0] == [moved]
    after = _check_offsets(admin, SORTED)
    assert after[0] == moved and after[1:] == [i for i in everything if i != moved]
    # A deletion shortens every later page and the total.
    gone = made[-1]
    assert_ok(admin.delete(f"/objects/documents/{gone}"))
    final = _check_offsets(admin, None)
    assert gone not in final and len(final) == len(everything) - 1
    _check_offsets(viewer, SORTED)
