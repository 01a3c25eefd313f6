"""Document metadata: the type tree, field definitions, lifecycles, rendition types.

Types, subtypes and classifications form one tree (``doc_types``). A document sits
on a leaf of it. The fields of a leaf are the standard fields plus every field
defined on the leaf or one of its ancestors.

Within ``unchanging()`` (a bulk create: a million rows read the same few metadata
rows again and again) the reads of the tree, the fields and the lifecycles are kept
for its duration; nothing in it may change metadata.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from vaultfs.errors import InvalidData, MalformedUrl, ParameterRequired

from .fields import FieldSpec
from .sql import Conn, Row

T = TypeVar("T")

__all__ = [
    "Classification",
    "TypeNode",
    "all_fields",
    "children",
    "classification_of",
    "fields_for",
    "find_node",
    "initial_state",
    "leaf_fields",
    "lifecycle_label",
    "lifecycle_states",
    "rendition_types",
    "resolve_classification",
    "resolve_lifecycle",
    "resolve_path",
    "resolve_status",
    "type_node",
    "unchanging",
]

_KEPT: ContextVar[dict[tuple[Any, ...], Any] | None] = ContextVar(
    "vaultfs_metadata_kept", default=None
)


@contextmanager
def unchanging() -> Iterator[None]:
    """Keep metadata reads until the block ends (metadata must not change in it)."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def _kept_value(key: tuple[Any, ...], make: Callable[[], T]) -> T:
    """``make()``, kept within ``unchanging`` under ``key`` (what is made of metadata
    rows: nodes and field specs decoded from JSON once per batch, not once per row)."""
    kept = _KEPT.get()
    if kept is None:
        return make()
    if key not in kept:
        kept[key] = make()
    value: T = kept[key]
    return value


def _rows(conn: Conn, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
    """The rows of a metadata query, kept within ``unchanging`` (rows are immutable)."""
    kept = _KEPT.get()
    if kept is None:
        return list(conn.execute(sql, params).fetchall())
    key = (sql, params)
    if key not in kept:
        kept[key] = list(conn.execute(sql, params).fetchall())
    return kept[key]


@dataclass(frozen=True)
class TypeNode:
    name: str
    label: str
    level: str
    parent: str | None
    name_default: str | None
    attachments_enabled: bool
    lifecycles: list[str]


@dataclass(frozen=True)
class Classification:
    """Where a document sits: its type and, when the tree has them, subtype and class."""

    type: TypeNode
    subtype: TypeNode | None
    classification: TypeNode | None

    @property
    def leaf(self) -> TypeNode:
        return self.classification or self.subtype or self.type

    @property
    def path(self) -> list[TypeNode]:
        return [n for n in (self.type, self.subtype, self.classification) if n is not None]


def _node(row: Row) -> TypeNode:
    return TypeNode(
        name=row["name"],
        label=row["label"],
        level=row["level"],
        parent=row["parent"],
        name_default=row["name_default"],
        attachments_enabled=bool(row["attachments_enabled"]),
        lifecycles=json.loads(row["lifecycles"]),
    )


def type_node(conn: Conn, name: str) -> TypeNode | None:
    row = conn.execute("SELECT * FROM doc_types WHERE name = ?", (name,)).fetchone()
    return _node(row) if row else None


def children(conn: Conn, parent: str | None, level: str) -> list[TypeNode]:
    return _kept_value(("children", parent, level), lambda: _children(conn, parent, level))


def _children(conn: Conn, parent: str | None, level: str) -> list[TypeNode]:
    # Two forms rather than SQLite's "parent IS ?", which PostgreSQL does not know.
    same_parent = "parent IS NULL" if parent is None else "parent = ?"
    rows = _rows(
        conn,
        f"SELECT * FROM doc_types WHERE level = ? AND {same_parent} ORDER BY position",
        (level,) if parent is None else (level, parent),
    )
    return [_node(r) for r in rows]


def find_node(conn: Conn, value: str, level: str, parent: str | None) -> TypeNode | None:
    """The node called ``value`` (API name or label, case-insensitive) under ``parent``."""
    for node in children(conn, parent, level):
        if value.strip().lower() in (node.name.lower(), node.label.lower()):
            return node
    return None


def _url_node(conn: Conn, name: str, level: str, parent: str | None) -> TypeNode:
    """Like find_node, for a path segment: unknown -> MALFORMED_URL."""
    node = find_node(conn, name, level, parent)
    if node is None:
        raise MalformedUrl(f"Unknown document {level} [{name}]")
    return node


def resolve_path(
    conn: Conn,
    type_: str,
    subtype: str | None = None,
    classification: str | None = None,
) -> Classification:
    """The nodes named in a metadata URL."""
    t = _url_node(conn, type_, "type", None)
    s = _url_node(conn, subtype, "subtype", t.name) if subtype is not None else None
    c = (
        _url_node(conn, classification, "classification", s.name)
        if classification is not None and s is not None
        else None
    )
    return Classification(t, s, c)


def resolve_classification(
    conn: Conn, type_: str | None, subtype: str | None, classification: str | None
) -> Classification:
    """Validate the classification fields of a create; it must reach a leaf."""
    if not type_:
        raise ParameterRequired("Missing required parameter [type__v]")
    t = find_node(conn, type_, "type", None)
    if t is None:
        raise InvalidData(f"Invalid value for [type__v]: unknown document type '{type_}'")
    s = c = None
    subtypes = children(conn, t.name, "subtype")
    if subtype:
        s = find_node(conn, subtype, "subtype", t.name)
        if s is None:
            raise InvalidData(
                f"Invalid value for [subtype__v]: '{subtype}' is not a subtype of '{t.label}'"
            )
    elif subtypes:
        raise ParameterRequired("Missing required parameter [subtype__v]")
    if s is not None:
        classes = children(conn, s.name, "classification")
        if classification:
            c = find_node(conn, classification, "classification", s.name)
            if c is None:
                raise InvalidData(
                    f"Invalid value for [classification__v]: '{classification}'"
                    f" is not a classification of '{s.label}'"
                )
        elif classes:
            raise ParameterRequired("Missing required parameter [classification__v]")
    elif classification:
        raise InvalidData("Invalid value for [classification__v]: the type has no subtypes")
    return Classification(t, s, c)


def classification_of(conn: Conn, doc: Row) -> Classification:
    """Where an existing document (a ``documents`` row) sits in the type tree."""
    nodes = [
        type_node(conn, doc[k]) if doc[k] else None for k in ("type", "subtype", "classification")
    ]
    if nodes[0] is None:
        raise MalformedUrl(f"Document type [{doc['type']}] no longer exists")
    return Classification(nodes[0], nodes[1], nodes[2])


def _spec(row: Row) -> FieldSpec:
    spec: FieldSpec = json.loads(row["spec"])
    return spec


def all_fields(conn: Conn) -> list[FieldSpec]:
    """Every field definition, with where it is defined (``definedIn``)."""
    rows = _rows(
        conn,
        "SELECT f.spec, f.defined_in, t.level FROM doc_fields f"
        " LEFT JOIN doc_types t ON t.name = f.defined_in ORDER BY f.position",
    )
    result = []
    for row in rows:
        spec = _spec(row)
        spec["shared"] = False
        spec["definedInType"] = row["level"] or "type"
        spec["definedIn"] = row["defined_in"] or "base_document__v"
        result.append(spec)
    return result


def fields_for(conn: Conn, nodes: list[TypeNode], inherited: bool = True) -> list[FieldSpec]:
    """Fields of the last node of ``nodes`` (with those of the levels above when inherited)."""
    levels = {n.name for n in (nodes if inherited else nodes[-1:])}
    return [
        spec
        for spec in all_fields(conn)
        if (spec["definedIn"] == "base_document__v" and inherited) or spec["definedIn"] in levels
    ]


def leaf_fields(conn: Conn, where: Classification) -> dict[str, FieldSpec]:
    names = tuple(node.name for node in where.path)
    kept = _kept_value(
        ("leaf_fields", names),
        lambda: {spec["name"]: spec for spec in fields_for(conn, where.path)},
    )
    return dict(kept)


# --- lifecycles -------------------------------------------------------------------


def resolve_lifecycle(conn: Conn, value: str, allowed: list[str]) -> str:
    rows = _rows(conn, "SELECT name, label FROM lifecycles")
    for row in rows:
        if value.strip().lower() in (row["name"].lower(), row["label"].lower()):
            if allowed and row["name"] not in allowed:
                break
            return str(row["name"])
    raise InvalidData(
        f"Invalid value for [lifecycle__v]: '{value}' is not a lifecycle "
        "available for this document type"
    )


def lifecycle_label(conn: Conn, name: str) -> str:
    row = conn.execute("SELECT label FROM lifecycles WHERE name = ?", (name,)).fetchone()
    return str(row["label"]) if row else name


def lifecycle_states(conn: Conn, lifecycle: str) -> list[Row]:
    return _rows(
        conn,
        "SELECT name, label FROM lifecycle_states WHERE lifecycle = ? ORDER BY position",
        (lifecycle,),
    )


def initial_state(conn: Conn, lifecycle: str) -> str:
    states = lifecycle_states(conn, lifecycle)
    return str(states[0]["label"]) if states else "Draft"


def resolve_status(conn: Conn, lifecycle: str, value: str) -> str:
    """The state label for ``value`` (name or label) in the lifecycle, or InvalidData."""
    for row in lifecycle_states(conn, lifecycle):
        if value.strip().lower() in (row["name"].lower(), row["label"].lower()):
            return str(row["label"])
    raise InvalidData(f"Invalid value for [status__v]: '{value}' is not a state of the lifecycle")


def rendition_types(conn: Conn) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT name, label FROM rendition_types ORDER BY position").fetchall()
    return [{"name": r["name"], "label": r["label"]} for r in rows]
