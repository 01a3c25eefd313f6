"""The document list (``GET /objects/documents``): one page of records and the total.

A plain listing (latest versions, no search or named filter, unsorted or sorted by
``version_modified_date__v``) is what mounts page through, at any size of vault: it is
read from ``documents`` alone, walking the index of its order (``documents_vault_id`` or
``documents_vault_modified``, revision 0003), and leaves out the documents the caller may
not see by their ids (access.hidden_sql: only restricted documents are looked at), so no
page sorts the vault or looks at each document's roles. Other listings (searches,
named filters, every version, other sorts) join the versions and sort as SQL sees fit.
Either way the page's records are then read with a handful of queries for all of its
rows (documents, versions, roles, CrossLinks), not a few per row. docs/server.md,
"Lists at a million documents", says why and what it costs.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from vaultfs.errors import InvalidData

from . import access, search
from .documents import decorate_with
from .records import MetaSnapshot, document_record
from .sql import Conn, Row, dialect_of, ilike, json_sort_key, json_text
from .users import SessionUser

__all__ = ["ListQuery", "list_documents"]

#: (document id, major, minor) of one row of a page
Key = tuple[int, int, int]
#: major and minor of a key that means the document's latest version
LATEST = -1

#: Sortable fields that are columns; other queryable editable fields sort by their
#: JSON value.
_SORT_COLUMNS = {
    "id": "d.id",
    "name__v": "lower(v.name)",
    "document_number__v": "d.document_number",
    "status__v": "v.status",
    "filename__v": "lower(v.filename)",
    "size__v": "v.size",
    "format__v": "v.format",
    "major_version_number__v": "v.major",
    "minor_version_number__v": "v.minor",
    "document_creation_date__v": "d.created_ms",
    "version_creation_date__v": "v.created_ms",
    "version_modified_date__v": "v.modified_ms",
    "created_by__v": "d.created_by",
    "last_modified_by__v": "v.modified_by",
    "type__v": "d.type",
    "lifecycle__v": "d.lifecycle",
}


@dataclass(frozen=True)
class ListQuery:
    caller: SessionUser
    start: int = 0
    limit: int = 200
    sort: str | None = None
    search: str | None = None
    #: None: fields only; ``contents``: file text only; ``all``: fields or file text
    scope: str | None = None
    all_versions: bool = False
    named_filter: str | None = None


def _field_match(conn: Conn) -> str:
    like = ilike(conn)
    title = json_text(conn, "v.fields", "title__v")
    return (
        f"(v.name {like} ? ESCAPE '\\' OR v.filename {like} ? ESCAPE '\\'"
        f" OR {title} {like} ? ESCAPE '\\')"
    )


def _keyword(conn: Conn, word: str, scope: str | None) -> tuple[str, list[Any]]:
    """The condition that one search keyword matches (every keyword must)."""
    pattern = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    fields = (_field_match(conn), [pattern, pattern, pattern])
    if scope is None:
        return fields
    query = search.text_query(conn, word)
    content = (search.CONTENT_MATCH[dialect_of(conn)], [query]) if query else ("1 = 0", [])
    if scope == "contents":
        return content
    return f"({fields[0]} OR {content[0]})", fields[1] + content[1]


def _order_by(conn: Conn, sort: str | None) -> tuple[str, list[Any]]:
    if not sort:
        return "d.id, v.major, v.minor", []
    parts = sort.split()
    direction = parts[1].lower() if len(parts) == 2 else "asc" if len(parts) == 1 else ""
    if direction not in ("asc", "desc"):
        raise InvalidData(f"Invalid value for [sort]: '{sort}' (expected '<field> asc|desc')")
    field = parts[0]
    params: list[Any] = []
    if field in _SORT_COLUMNS:
        expr = _SORT_COLUMNS[field]
    else:
        known = {spec["name"] for spec in MetaSnapshot.load(conn).fields if spec["queryable"]}
        if field not in known:
            raise InvalidData(f"Invalid value for [sort]: unknown field '{field}'")
        expr, key = json_sort_key(conn, "v.fields")
        params.append(key(field))
    # Missing values first going up, last going down (SQLite's order, said aloud so
    # PostgreSQL sorts the same); id and version as tie-breakers keep pages stable.
    nulls = "NULLS FIRST" if direction == "asc" else "NULLS LAST"
    order = direction.upper()
    return f"{expr} {order} {nulls}, d.id {order}, v.major, v.minor", params


@dataclass(frozen=True)
class _Plain:
    """A plain listing's order: the SQL, and how a key compares going forward."""

    order: str
    #: the columns of the key, and the comparison that means "after this key"
    columns: str
    after: str


_BY_ID = _Plain("d.id", "d.id", ">")


def _plain_order(query: ListQuery) -> _Plain | None:
    """The order of a plain listing over ``documents d``; None if the query is not one."""
    if query.all_versions or (query.search or "").split() or (query.named_filter or "").strip():
        return None
    if not query.sort:
        return _BY_ID
    parts = query.sort.split()
    if parts[0] != "version_modified_date__v" or len(parts) > 2:
        return None
    direction = parts[1].lower() if len(parts) == 2 else "asc"
    if direction not in ("asc", "desc"):
        return None
    # The general order's NULLS clauses do not matter here: modified_ms is NOT NULL.
    way = direction.upper()
    return _Plain(
        f"d.modified_ms {way}, d.id {way}",
        "d.modified_ms, d.id",
        "<" if direction == "desc" else ">",
    )


@dataclass
class _Starts:
    """Where pages began, for one vault, order and set of hidden documents: offset ->
    the key of the row just before it. Good while the vault's list generation stands."""

    generation: int
    keys: dict[int, tuple[Any, ...]] = field(default_factory=dict)


#: per database engine (a new engine, a new database), per (vault, order, hidden ids)
_STARTS: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], _Starts]] = (
    weakref.WeakKeyDictionary()
)
_STARTS_LOCK = threading.Lock()
#: page starts kept per listing (a million documents in pages of 200: 5,000) and
#: listings kept per database (each set of hidden documents is one)
_MAX_STARTS = 20_000
_MAX_LISTINGS = 256


def _starts(conn: Conn, key: tuple[Any, ...], generation: int) -> _Starts | None:
    engine = getattr(getattr(conn, "connection", None), "engine", None)
    if engine is None:
        return None
    with _STARTS_LOCK:
        listings = _STARTS.setdefault(engine, {})
        found = listings.get(key)
        if found is None or found.generation != generation:
            if len(listings) >= _MAX_LISTINGS:
                listings.clear()
            found = listings[key] = _Starts(generation)
        return found


def _plain_page(
    conn: Conn, vault_id: int, query: ListQuery, plain: _Plain
) -> tuple[list[Key], int]:
    """A page of a plain listing: from the nearest known page start at or before the
    offset (keyset), skipping only the rows between it and the offset."""
    state = conn.execute(
        "SELECT generation, documents FROM document_list_state WHERE vault_id = ?", (vault_id,)
    ).fetchone()
    generation, documents = (state[0], state[1]) if state is not None else (0, 0)
    where = "d.vault_id = ?"
    params: list[Any] = [vault_id]
    hiding = hashlib.blake2b(digest_size=16)
    hidden_count = 0
    hidden = access.hidden_sql(query.caller)
    if hidden is not None:
        rows = conn.execute(
            f"SELECT d.id FROM documents d WHERE d.vault_id = ? AND d.id IN ({hidden[0]})"
            " ORDER BY d.id",
            [vault_id, *hidden[1]],
        ).fetchall()
        hidden_count = len(rows)
        hiding.update(b"".join(int(r[0]).to_bytes(8, "little") for r in rows))
        # The query, not the list of ids: there may be more than SQL takes parameters.
        if rows:
            where += f" AND d.id NOT IN ({hidden[0]})"
            params += hidden[1]
    total = int(documents) - hidden_count
    # Listings that hide the same documents share their page starts.
    starts = _starts(conn, (vault_id, plain.order, hiding.hexdigest()), generation)
    anchor, after = 0, None
    if starts is not None and query.start > 0:
        with _STARTS_LOCK:
            known = [o for o in starts.keys if o <= query.start]
            if known:
                anchor = max(known)
                after = starts.keys[anchor]
    if after is not None:
        marks = ", ".join("?" * len(after))
        where += f" AND ({plain.columns}) {plain.after} ({marks})"
        params += after
    # One row more than the page when it starts after the anchor: the key just before
    # the page, kept so the same page asked again starts right there.
    before = 1 if query.start > anchor else 0
    rows = conn.execute(
        f"SELECT d.id, {plain.columns} FROM documents d"
        f" WHERE {where} ORDER BY {plain.order} LIMIT ? OFFSET ?",
        [*params, query.limit + before, query.start - anchor - before],
    ).fetchall()
    if starts is not None and rows:
        with _STARTS_LOCK:
            if len(starts.keys) >= _MAX_STARTS:
                starts.keys.clear()
            if before:
                starts.keys[query.start] = tuple(rows[0][1:])
            starts.keys[query.start + len(rows) - before] = tuple(rows[-1][1:])
    return [(r[0], LATEST, LATEST) for r in rows[before:]], total


def _general_page(conn: Conn, vault_id: int, query: ListQuery) -> tuple[list[Key], int]:
    visible, visible_params = access.visible_sql(query.caller)
    where = ["d.vault_id = ?", visible]
    params: list[Any] = [vault_id, *visible_params]
    if not query.all_versions:
        where.append("v.major = d.latest_major AND v.minor = d.latest_minor")
    for word in (query.search or "").split():
        condition, condition_params = _keyword(conn, word, query.scope)
        where.append(condition)
        params += condition_params
    user_id = query.caller.user.id
    filter_name = (query.named_filter or "").strip().lower()
    if filter_name == "my documents":
        where.append(
            "(d.created_by = ? OR EXISTS (SELECT 1 FROM document_roles o WHERE o.doc_id = d.id"
            " AND o.role = 'owner__v' AND o.kind = 'users' AND o.principal = ?))"
        )
        params += [user_id, user_id]
    elif filter_name == "recent documents":
        where.append("(v.modified_by = ? OR d.created_by = ?)")
        params += [user_id, user_id]
    elif filter_name == "favorites":
        where.append("d.id IN (SELECT doc_id FROM favorites WHERE user_id = ?)")
        params.append(user_id)
    elif filter_name:
        raise InvalidData(f"Invalid value for [named_filter]: '{query.named_filter}'")
    order, order_params = _order_by(conn, query.sort)
    if filter_name == "recent documents":
        order, order_params = "v.modified_ms DESC, d.id", []
    base = "FROM documents d JOIN versions v ON v.doc_id = d.id WHERE " + " AND ".join(where)
    total = conn.execute("SELECT count(*) " + base, params).fetchone()[0]
    rows = conn.execute(
        "SELECT d.id, v.major, v.minor " + base + f" ORDER BY {order} LIMIT ? OFFSET ?",
        [*params, *order_params, query.limit, query.start],
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows], int(total)


def list_documents(conn: Conn, vault_id: int, query: ListQuery) -> tuple[list[dict[str, Any]], int]:
    """One page of document records and the total number matching."""
    plain = _plain_order(query)
    if plain is not None:
        keys, total = _plain_page(conn, vault_id, query, plain)
    else:
        keys, total = _general_page(conn, vault_id, query)
    records = _records(conn, keys)
    words = (query.search or "").split()
    if query.scope is not None and words:
        for record in records:
            highlights = _term_highlights(conn, record["id"], words)
            if highlights:
                record["term_highlights"] = highlights
    return records, total


def _records(conn: Conn, keys: list[Key]) -> list[dict[str, Any]]:
    """The records of a page's rows, in its order: four queries for the whole page.

    The rows passed the caller's visibility filter already (the same rule as
    access.check), so no row is checked again."""
    if not keys:
        return []
    ids = sorted({k[0] for k in keys})
    marks = ", ".join("?" * len(ids))
    docs = {r["id"]: r for r in conn.execute(f"SELECT * FROM documents WHERE id IN ({marks})", ids)}
    versions: dict[Key, Row] = {}
    for row in conn.execute(f"SELECT * FROM versions WHERE doc_id IN ({marks})", ids):
        key = (row["doc_id"], row["major"], row["minor"])
        doc = docs[row["doc_id"]]
        if (doc["latest_major"], doc["latest_minor"]) == key[1:]:
            versions[(key[0], LATEST, LATEST)] = row
        versions[key] = row
    roles: dict[int, dict[str, dict[str, list[int]]]] = {}
    for row in conn.execute(
        "SELECT doc_id, role, kind, principal FROM document_roles"
        f" WHERE doc_id IN ({marks}) ORDER BY doc_id, role, kind, principal",
        ids,
    ):
        entry = roles.setdefault(row["doc_id"], {}).setdefault(
            row["role"], {"users": [], "groups": []}
        )
        entry[row["kind"]].append(row["principal"])
    links = {
        r["doc_id"]: r
        for r in conn.execute(f"SELECT * FROM crosslinks WHERE doc_id IN ({marks})", ids)
    }
    meta = MetaSnapshot.load(conn)
    records = []
    for key in keys:
        doc, ver = docs[key[0]], versions[key]
        record = document_record(meta, doc, ver)
        records.append(decorate_with(doc, record, roles.get(key[0], {}), links.get(key[0])))
    return records


def _term_highlights(conn: Conn, doc_id: int, words: list[str]) -> list[dict[str, Any]]:
    """Per version whose file text matches: the keywords found in it."""
    rows = conn.execute(
        "SELECT major, minor, blob FROM versions WHERE doc_id = ? AND blob IS NOT NULL"
        " ORDER BY major, minor",
        (doc_id,),
    ).fetchall()
    result = []
    for row in rows:
        terms = search.matched_terms(conn, row["blob"], words)
        if terms:
            result.append(
                {
                    "name": "content",
                    "highlight": terms,
                    "major_version_number__v": row["major"],
                    "minor_version_number__v": row["minor"],
                }
            )
    return result
