"""Document events: event type metadata, logging an event on a version, reading them.

Event types (``event_types``) hold their subtypes; a subtype lists its
classifications and its own properties (name, label, type, required). Every event
also has the common properties below. Logging accepts labels or names for
``event_type__v``, ``event_subtype__v`` and ``classification__v``; missing required
properties are ``PARAMETER_REQUIRED`` (one error each), unknown or invalid ones
``INVALID_DATA`` (one error each), an unknown event type ``METHOD_NOT_SUPPORTED``.
Records omit properties that are null or false.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vaultfs.errors import InvalidData, MethodNotSupported, ParameterRequired, VaultError
from vaultfs.wire import parse_datetime

from .documents import get_document, get_version
from .records import format_ms, version_id
from .sql import Conn, Row
from .users import SessionUser

__all__ = [
    "EventQuery",
    "event_types",
    "find_subtype",
    "find_type",
    "list_events",
    "log_event",
    "subtype_properties",
]

_CLASSIFYING = ("event_type__v", "event_subtype__v", "classification__v")


def _prop(
    name: str,
    label: str,
    type_: str,
    *,
    required: bool = False,
    editable: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "name": name,
        "label": label,
        "type": type_,
        "required": required,
        "editable": editable,
        "queryable": True,
        **extra,
    }


#: Properties every event has, before those of its subtype.
_COMMON = [
    _prop("id", "ID", "ID", editable=False),
    _prop("event_type__v", "Event Type", "String", required=True),
    _prop("event_subtype__v", "Event Subtype", "String", required=True),
    _prop("classification__v", "Classification", "String", required=True),
    _prop("document_version_id__v", "Document Version", "ID", editable=False),
    _prop("event_date__v", "Event Date", "DateTime"),
    _prop("user_id__v", "User", "ObjectReference", editable=False, objectType="users"),
    _prop("external_id__v", "External ID", "String", maxLength=255),
]


def event_types(conn: Conn) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT spec FROM event_types ORDER BY position").fetchall()
    return [json.loads(r[0]) for r in rows]


def _matches(entry: Mapping[str, Any], value: str) -> bool:
    return value.strip().lower() in (str(entry["name"]).lower(), str(entry["label"]).lower())


def find_type(conn: Conn, value: str) -> dict[str, Any]:
    for spec in event_types(conn):
        if _matches(spec, value):
            return spec
    raise MethodNotSupported(f"Invalid event type [{value}]")


def find_subtype(spec: Mapping[str, Any], value: str) -> dict[str, Any]:
    for sub in spec["subtypes"]:
        if _matches(sub, value):
            return dict(sub)
    raise MethodNotSupported(f"Invalid event subtype [{value}] of event type [{spec['name']}]")


def subtype_properties(subtype: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every property of events of the subtype (common ones first)."""
    classes = [c["name"] for c in subtype.get("classifications", [])]
    common = [{**p, "values": classes} if p["name"] == "classification__v" else p for p in _COMMON]
    own = [
        _prop(
            p["name"],
            p["label"],
            p["type"],
            required=p.get("required", False),
            **({"maxLength": p["maxLength"]} if "maxLength" in p else {}),
        )
        for p in subtype.get("properties", [])
    ]
    return common + own


def _parse(prop: Mapping[str, Any], text: str) -> Any:
    """The stored value of a property, or ValueError."""
    kind = prop["type"]
    if kind == "Number":
        number = float(text)
        if number != number or number in (float("inf"), float("-inf")):
            raise ValueError(text)
        return int(number) if number.is_integer() else number
    if kind == "Boolean":
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise ValueError(text)
        return lowered == "true"
    if kind == "Date":
        return datetime.strptime(text.strip(), "%Y-%m-%d").strftime("%Y-%m-%d")
    if kind == "DateTime":
        return int(parse_datetime(text).timestamp() * 1000)
    if len(text) > prop.get("maxLength", 1500):
        raise ValueError(text)
    return text


def _error(kind: type[VaultError], problems: list[str], summary: str) -> VaultError:
    return kind(
        summary + ": " + ", ".join(f"[{p.split(']')[0].lstrip('[')}]" for p in problems),
        errors=[{"type": kind.type, "message": p} for p in problems],
    )


def log_event(
    conn: Conn,
    caller: SessionUser,
    doc_id: int,
    version: tuple[int, int],
    form: Mapping[str, str],
    now: int,
) -> int:
    """Log an event on a version; returns its id."""
    get_version(conn, caller.vault_id, doc_id, *version)
    given = {k: v for k, v in form.items() if v.strip() != ""}
    missing = [f"[{n}] is required" for n in _CLASSIFYING if n not in given]
    if "event_type__v" not in given:
        raise _error(ParameterRequired, missing, "Missing required parameter(s)")
    spec = find_type(conn, given["event_type__v"])
    invalid: list[str] = []
    subtype: dict[str, Any] | None = None
    if "event_subtype__v" in given:
        try:
            subtype = find_subtype(spec, given["event_subtype__v"])
        except MethodNotSupported:
            invalid.append(f"[event_subtype__v] '{given['event_subtype__v']}' is not a subtype")
    props = {p["name"]: p for p in subtype_properties(subtype or {})}
    values: dict[str, Any] = {}
    classification = None
    if subtype is not None:
        missing += [
            f"[{name}] is required"
            for name, p in props.items()
            if p["required"] and name not in _CLASSIFYING and name not in given
        ]
        if "classification__v" in given:
            wanted = given["classification__v"]
            found = [c for c in subtype.get("classifications", []) if _matches(c, wanted)]
            if found:
                classification = found[0]["name"]
            else:
                invalid.append(f"[classification__v] '{wanted}' is not a classification")
    for name, text in given.items():
        if name in _CLASSIFYING:
            continue
        prop = props.get(name)
        if subtype is None:
            continue
        if prop is None or not prop["editable"]:
            invalid.append(f"[{name}] is not a property of [{subtype['name']}] events")
            continue
        try:
            values[name] = _parse(prop, text)
        except ValueError:
            invalid.append(f"[{name}] '{text[:100]}' is not a valid {prop['type']}")
    if missing:
        raise _error(ParameterRequired, missing, "Missing required parameter(s)")
    if invalid or subtype is None or classification is None:
        raise _error(InvalidData, invalid, "Invalid value(s)")
    event_ms = values.pop("event_date__v", now)
    cur = conn.execute(
        "INSERT INTO document_events (doc_id, major, minor, event_type, event_subtype,"
        " classification, event_ms, created_by, properties) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " RETURNING id",
        (
            doc_id,
            *version,
            spec["name"],
            subtype["name"],
            classification,
            event_ms,
            caller.user.id,
            json.dumps(values),
        ),
    )
    return int(cur.fetchone()[0])


def _record(row: Row) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": row["id"],
        "event_type__v": row["event_type"],
        "event_subtype__v": row["event_subtype"],
        "classification__v": row["classification"],
        "document_version_id__v": version_id(row["doc_id"], row["major"], row["minor"]),
        "event_date__v": format_ms(row["event_ms"]),
        "user_id__v": row["created_by"],
        **json.loads(row["properties"]),
    }
    # Null and false properties are left out of event records.
    return {k: v for k, v in record.items() if v is not None and v is not False}


@dataclass(frozen=True)
class EventQuery:
    #: property name -> wanted value (text, as in the query string)
    filters: dict[str, str]
    start_ms: int | None = None
    end_ms: int | None = None
    start: int = 0
    limit: int = 200


def list_events(
    conn: Conn, vault_id: int, doc_id: int, query: EventQuery
) -> tuple[list[dict[str, Any]], int]:
    """The document's events, oldest first, filtered; and how many match in all."""
    get_document(conn, vault_id, doc_id)
    where, params = ["doc_id = ?"], [doc_id]
    if query.start_ms is not None:
        where.append("event_ms >= ?")
        params.append(query.start_ms)
    if query.end_ms is not None:
        where.append("event_ms <= ?")
        params.append(query.end_ms)
    rows = conn.execute(
        "SELECT * FROM document_events WHERE " + " AND ".join(where) + " ORDER BY event_ms, id",
        params,
    ).fetchall()
    labels = _labels(conn)
    matching = []
    for row in rows:
        record = _record(row)
        if all(
            _filter_matches(record, name, wanted, labels) for name, wanted in query.filters.items()
        ):
            matching.append(record)
    return matching[query.start : query.start + query.limit], len(matching)


def _labels(conn: Conn) -> dict[str, str]:
    """API name -> label of event types, subtypes and classifications."""
    labels: dict[str, str] = {}
    for spec in event_types(conn):
        labels[spec["name"]] = spec["label"]
        for sub in spec["subtypes"]:
            labels[sub["name"]] = sub["label"]
            for entry in sub.get("classifications", []):
                labels[entry["name"]] = entry["label"]
    return labels


def _filter_matches(
    record: Mapping[str, Any], name: str, wanted: str, labels: Mapping[str, str]
) -> bool:
    value = record.get(name)
    if value is None:
        return False
    wanted = wanted.strip().lower()
    if isinstance(value, bool):
        return str(value).lower() == wanted
    text = str(value)
    return wanted in (text.lower(), labels.get(text, text).lower())
