"""Bulk (CSV) routes: create and update documents, import versions and renditions,
delete versions.

The input is standard CSV in UTF-8 (at most 1 GB; spooled to a temporary file, not
held in memory), one row per item, with a header line; batches are limited to 500
rows (1,000 for updates) and a larger batch is refused whole. A ``file`` cell names a
file in the vault's staging directory (``DATA/staging``; the cell is a path inside
it, a leading ``/`` allowed, and can never leave it). The answer lists one result per
row in input order, as JSON or, with ``Accept: text/csv``, as CSV. Bulk operations
exist since API v9.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import trio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import InvalidData, OperationNotAllowed, VaultError
from vaultfs.wire import MAX_FILE_SIZE

from .. import formats, versions
from ..envelope import is_api_type
from ..permissions import Permission
from ..state import VaultState
from ..storage import bulk, search
from ..storage.content import ContentStore, ContentUnavailable, StoredFile
from ..storage.users import SessionUser
from .common import caller, check_numbers, form, query, since, state

__all__ = ["routes"]

#: Largest CSV (or JSON) input.
MAX_INPUT = 1024**3
_SPOOL_IN_MEMORY = 1024 * 1024
_COPY_CHUNK = 1024 * 1024
_MIGRATION_HEADER = "x-vaultapi-migrationmode"


async def _spool(request: Request) -> IO[bytes]:
    """The request body in a temporary file (INVALID_DATA beyond MAX_INPUT)."""
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)  # noqa: SIM115
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_INPUT:
                raise InvalidData(f"The input is larger than the limit of {MAX_INPUT} bytes")
            spool.write(chunk)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


#: One input row, and the error that already fails it (a malformed row fails alone).
Row = tuple[dict[str, str], VaultError | None]
#: Cells of a row that hold record ids or version numbers.
_NUMBER_CELLS = ("id", "major_version_number__v", "minor_version_number__v")


def _checked(row: dict[str, str], error: VaultError | None = None) -> Row:
    """A row with the error of a number no record can have (it must not reach SQL)."""
    if error is None:
        try:
            check_numbers(row, _NUMBER_CELLS)
        except InvalidData as exc:
            error = exc
    return row, error


def _csv_rows(spool: IO[bytes], limit: int) -> list[Row]:
    """The rows of a CSV body (blocking)."""
    try:
        text = io.TextIOWrapper(spool, encoding="utf-8-sig", newline="")
        reader = csv.DictReader(text, strict=True)
        rows: list[Row] = []
        for row in reader:
            if None in row:
                raise InvalidData(f"CSV line {reader.line_num} has more cells than the header")
            error = None
            if any(value is None for value in row.values()):
                # The spec: per-row failures of bulk results are INVALID_DATA.
                error = InvalidData(f"CSV line {reader.line_num} has fewer cells than the header")
            cells = {k.strip(): (v or "") for k, v in row.items() if k and k.strip()}
            rows.append(_checked(cells, error))
            if len(rows) > limit:
                raise InvalidData(f"The batch has more than {limit} rows")
        if reader.fieldnames is None:
            raise InvalidData("The CSV input is empty: it needs a header line")
        return rows
    except UnicodeDecodeError:
        raise InvalidData("The CSV input is not valid UTF-8") from None
    except csv.Error as exc:
        raise InvalidData(f"The CSV input is malformed: {exc}") from None
    finally:
        spool.close()


def _json_rows(spool: IO[bytes], limit: int) -> list[Row]:
    """The rows of a JSON body: an array of objects (blocking)."""
    try:
        data = json.loads(spool.read())
    except (ValueError, UnicodeDecodeError):
        raise InvalidData("The JSON input is malformed") from None
    finally:
        spool.close()
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise InvalidData("The JSON input must be an array of objects")
    if len(data) > limit:
        raise InvalidData(f"The batch has more than {limit} rows")
    return [
        _checked({str(k): "" if v is None else str(v) for k, v in item.items()}) for item in data
    ]


async def _rows(request: Request, limit: int, *, json_allowed: bool = False) -> list[Row]:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in ("text/csv", "application/csv") and not (
        json_allowed and media == "application/json"
    ):
        allowed = "text/csv or application/json" if json_allowed else "text/csv"
        raise InvalidData(f"Unsupported Content-Type '{media}': send {allowed}")
    spool = await _spool(request)
    parse = _json_rows if media == "application/json" else _csv_rows
    rows = await trio.to_thread.run_sync(parse, spool, limit)
    if not rows:
        raise InvalidData("The input has no rows")
    return rows


# --- files of rows ------------------------------------------------------------------


def _staged(data_dir: Path, cell: str) -> Path:
    """The staging file a ``file`` cell names (never outside the staging directory)."""
    staging = (data_dir / "staging").resolve()
    candidate = (staging / cell.strip().lstrip("/")).resolve()
    if not candidate.is_relative_to(staging) or candidate == staging:
        raise InvalidData(f"Invalid value for [file]: '{cell}' is not in the staging directory")
    if not candidate.is_file():
        raise InvalidData(f"Invalid value for [file]: no staged file '{cell}'")
    return candidate


def _store_file(blobs: ContentStore, data_dir: Path, cell: str) -> tuple[StoredFile, str | None]:
    """Copy a staged file into the content store and extract its text (blocking)."""
    source = _staged(data_dir, cell)
    if source.stat().st_size > MAX_FILE_SIZE:
        raise InvalidData(f"Invalid value for [file]: '{cell}' is larger than 4 GB")
    with source.open("rb") as f:
        try:
            info = blobs.put_stream(f, MAX_FILE_SIZE, _COPY_CHUNK)
        except ContentUnavailable as exc:
            raise OperationNotAllowed(f"The vault could not store '{cell}' now ({exc})") from None
    stored = StoredFile(blob=info, filename=source.name)
    return stored, search.extract_text(source, source.name)


async def _prepare(vault: VaultState, rows: list[Row]) -> list[bulk.Prepared]:
    prepared = []
    for row, error in rows:
        cell = row.get("file", "").strip()
        if not cell or error is not None:
            prepared.append(bulk.Prepared(row, error=error))
            continue
        try:
            stored, text = await trio.to_thread.run_sync(
                _store_file, vault.blobs, vault.config.data_dir, cell
            )
        except VaultError as exc:
            prepared.append(bulk.Prepared(row, error=exc))
        except OSError:
            error = InvalidData(f"Invalid value for [file]: '{cell}' cannot be read")
            prepared.append(bulk.Prepared(row, error=error))
        else:
            prepared.append(bulk.Prepared(row, file=stored, text=text))
    return prepared


# --- answers ------------------------------------------------------------------------


def _csv_row(result: dict[str, Any]) -> dict[str, Any]:
    row = {k: v for k, v in result.items() if k != "errors"}
    if "errors" in result:
        row["errors"] = "; ".join(f"{e['type']}: {e['message']}" for e in result["errors"])
    return row


def _typed(result: dict[str, Any]) -> dict[str, Any]:
    """A row result whose errors are all of the API's types (an unexpected failure of a
    row, which changed nothing, is INVALID_DATA as the spec says of row failures)."""
    if "errors" in result:
        result["errors"] = [
            e if is_api_type(e["type"]) else {**e, "type": "INVALID_DATA"} for e in result["errors"]
        ]
    return result


def _answer(request: Request, results: list[dict[str, Any]]) -> Response:
    results = [_typed(r) for r in results]
    body = {"responseStatus": "SUCCESS", "data": results}
    return formats.render(request, body, csv_rows=[_csv_row(r) for r in results])


def _by_external(request: Request) -> bool:
    param = query(request, "idParam")
    if param not in (None, "id", "external_id__v"):
        raise InvalidData(f"Invalid value for [idParam]: '{param}' (external_id__v)")
    return param == "external_id__v"


async def _require_migration_mode(request: Request, who: SessionUser) -> None:
    asked = request.headers.get(_MIGRATION_HEADER, "").strip().lower() == "true"
    if (
        asked
        or state(request).config.migration_mode
        or await state(request).db.read(bulk.migration_mode, who.vault_id)
    ):
        return
    raise OperationNotAllowed(
        "The vault is not in migration mode (send X-VaultAPI-MigrationMode: true as an admin,"
        " start the server with --migration-mode, or set the vault's migration_mode)"
    )


RowHandler = Callable[[sqlite3.Connection, bulk.Prepared], dict[str, Any]]


async def _run(request: Request, prepared: list[bulk.Prepared], handle: RowHandler) -> Response:
    results = await state(request).db.write(bulk.run_rows, prepared, handle)
    return _answer(request, results)


async def create_documents(request: Request) -> Response:
    who = caller(request, Permission.CREATE)
    vault = state(request)
    prepared = await _prepare(vault, await _rows(request, 500))
    now = vault.db.tick()
    return await _run(request, prepared, lambda conn, item: bulk.create_row(conn, who, item, now))


async def update_documents(request: Request) -> Response:
    who = caller(request, Permission.EDIT)
    vault = state(request)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media == "application/x-www-form-urlencoded":
        rows = await _form_rows(request)
    else:
        rows = await _rows(request, 1000)
    prepared = [bulk.Prepared(row, error=error) for row, error in rows]
    by_external = _by_external(request)
    now = vault.db.tick()
    return await _run(
        request, prepared, lambda conn, item: bulk.update_row(conn, who, item, by_external, now)
    )


async def _form_rows(request: Request) -> list[Row]:
    """``docIds=1,2,3`` and fields: the same fields for each listed document."""
    body = await form(request)
    fields = dict(body.fields)
    ids = [i.strip() for i in fields.pop("docIds", "").split(",") if i.strip()]
    if not ids:
        raise InvalidData("Missing document ids: send docIds=<id>,<id>,...")
    if len(ids) > 1000:
        raise InvalidData("The batch has more than 1000 rows")
    return [_checked({"id": doc_id, **fields}) for doc_id in ids]


async def _import(request: Request, row: Callable[..., dict[str, Any]]) -> Response:
    """A migration-mode import (versions or renditions): ``row(conn, who, item,
    by_external, now)`` handles one row."""
    who = caller(request, Permission.MIGRATE)
    await _require_migration_mode(request, who)
    vault = state(request)
    by_external = _by_external(request)
    prepared = await _prepare(vault, await _rows(request, 500))
    now = vault.db.tick()
    return await _run(request, prepared, lambda conn, item: row(conn, who, item, by_external, now))


async def create_versions(request: Request) -> Response:
    return await _import(request, bulk.version_row)


async def add_renditions(request: Request) -> Response:
    return await _import(request, bulk.rendition_row)


async def delete_versions(request: Request) -> Response:
    who = caller(request, Permission.DELETE)
    vault = state(request)
    by_external = _by_external(request)
    rows = await _rows(request, 500, json_allowed=True)
    prepared = [bulk.Prepared(row, error=error) for row, error in rows]
    now = vault.db.tick()
    return await _run(
        request,
        prepared,
        lambda conn, item: bulk.delete_version_row(conn, who, item, by_external, now),
    )


def routes() -> list[BaseRoute]:
    gate = since(versions.BULK)
    docs = "/objects/documents"
    return [
        Route(docs + "/batch", gate(create_documents), methods=["POST"]),
        Route(docs + "/batch", gate(update_documents), methods=["PUT"]),
        Route(docs + "/versions/batch", gate(create_versions), methods=["POST"]),
        Route(docs + "/versions/batch", gate(delete_versions), methods=["DELETE"]),
        # Bulk renditions came with attachments (the spec's "v12 / v13" row).
        Route(
            docs + "/renditions/batch",
            since(versions.ATTACHMENTS)(add_renditions),
            methods=["POST"],
        ),
    ]
