"""Lifecycle actions of document (and binder) versions: list, entry requirements, start.

The actions of a version are those of its lifecycle's current state
(``lifecycle_actions``). None are offered while the document is in an active
workflow. Entry requirements (``entry_requirements``) have a scope: ``Document`` /
``Binder`` ones must already be set on the document (their ``currentSetting`` shows
the value), ``WorkflowActivation`` ones are sent when starting the action. A
``stateChange`` action moves the version to its target state; a ``workflow`` action
records a workflow (its inputs), moves the version to the workflow's state and makes
the document's workflow active until its state is set by hand (a field update of
``status__v``). A failed start changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from vaultfs.errors import (
    InvalidData,
    MalformedUrl,
    OperationNotAllowed,
    ParameterRequired,
)

from .changes import check_not_locked_by_other, touch_version
from .documents import get_version
from .sql import Conn, Row
from .users import SessionUser

__all__ = ["entry_requirements", "list_actions", "start_action"]

_DOCUMENT_SCOPES = ("Document", "Binder")


def _state_of(conn: Conn, lifecycle: str, status: str) -> str | None:
    row = conn.execute(
        "SELECT name FROM lifecycle_states WHERE lifecycle = ? AND (label = ? OR name = ?)",
        (lifecycle, status, status),
    ).fetchone()
    return str(row[0]) if row else None


def _in_workflow(conn: Conn, doc_id: int) -> Row | None:
    row: Row | None = conn.execute(
        "SELECT * FROM workflows WHERE doc_id = ? AND active = 1", (doc_id,)
    ).fetchone()
    return row


def _actions(conn: Conn, doc: Row, ver: Row) -> list[Row]:
    if _in_workflow(conn, doc["id"]) is not None:
        return []
    state = _state_of(conn, doc["lifecycle"], ver["status"])
    return conn.execute(
        "SELECT * FROM lifecycle_actions WHERE lifecycle = ? AND state = ? ORDER BY name",
        (doc["lifecycle"], state),
    ).fetchall()


def _requirements(conn: Conn, lifecycle: str, action: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT spec FROM entry_requirements WHERE lifecycle = ? AND action = ? ORDER BY position",
        (lifecycle, action),
    ).fetchall()
    return [json.loads(r[0]) for r in rows]


def list_actions(
    conn: Conn,
    vault_id: int,
    doc_id: int,
    version: tuple[int, int],
    may_start: bool,
) -> list[dict[str, Any]]:
    """The version's actions: ``name__v``, ``label__v``, type, whether it has requirements."""
    doc, ver = get_version(conn, vault_id, doc_id, *version)
    result = []
    for row in _actions(conn, doc, ver):
        entry: dict[str, Any] = {
            "name__v": row["name"],
            "label__v": row["label"],
            "lifecycle_action_type__v": row["action_type"],
            "lifecycle__v": doc["lifecycle"],
            "state__v": row["state"],
            "executable__v": may_start,
        }
        if _requirements(conn, doc["lifecycle"], row["name"]):
            entry["entry_requirements__v"] = row["name"]  # made a URL by the route
        result.append(entry)
    return result


def _action(conn: Conn, doc: Row, ver: Row, name: str) -> Row:
    for row in _actions(conn, doc, ver):
        if row["name"] == name:
            return row
    if _in_workflow(conn, doc["id"]) is not None:
        raise OperationNotAllowed(
            f"Document [{doc['id']}] is in an active workflow: no lifecycle action can start"
        )
    raise MalformedUrl(
        f"Lifecycle action [{name}] is not available for version "
        f"[{ver['major']}.{ver['minor']}] of document [{doc['id']}] in state [{ver['status']}]"
    )


def _current(ver: Row, name: str) -> Any:
    values = json.loads(ver["fields"])
    value = {"name__v": ver["name"], "status__v": ver["status"]}.get(name, values.get(name))
    return None if value in (None, [], "") else value


def entry_requirements(
    conn: Conn, vault_id: int, doc_id: int, version: tuple[int, int], name: str
) -> list[dict[str, Any]]:
    doc, ver = get_version(conn, vault_id, doc_id, *version)
    action = _action(conn, doc, ver, name)
    result = []
    for spec in _requirements(conn, doc["lifecycle"], action["name"]):
        if spec["scope"] in _DOCUMENT_SCOPES:
            current = _current(ver, spec["name"])
            if current is not None:
                spec["currentSetting"] = current
        result.append(spec)
    return result


def _principals(conn: Conn, vault_id: int, name: str, text: str) -> list[str]:
    """A user/group list value: ``user:<id>`` and ``group:<id>`` items (each must exist)."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    for item in items:
        kind, _, ident = item.partition(":")
        if kind not in ("user", "group") or not (ident.isascii() and ident.isdigit()):
            raise InvalidData(
                f"Invalid value for [{name}]: '{item}' (user:<id> or group:<id> items)"
            )
        if kind == "user":
            sql = "SELECT 1 FROM vault_members WHERE vault_id = ? AND user_id = ?"
        else:
            sql = "SELECT 1 FROM groups WHERE vault_id = ? AND id = ?"
        if conn.execute(sql, (vault_id, int(ident))).fetchone() is None:
            raise InvalidData(f"Invalid value for [{name}]: no such {kind} [{ident}]")
    return items


def _activation_value(conn: Conn, vault_id: int, spec: Mapping[str, Any], text: str) -> Any:
    name, kind = spec["name"], spec["type"][0]
    if kind == "Date":
        try:
            return datetime.strptime(text.strip(), "%Y-%m-%d").strftime("%Y-%m-%d")
        except ValueError:
            raise InvalidData(f"Invalid value for [{name}]: '{text}' (YYYY-MM-DD)") from None
    if kind == "ObjectReference":
        return _principals(conn, vault_id, name, text)
    return text


def start_action(
    conn: Conn,
    caller: SessionUser,
    doc_id: int,
    version: tuple[int, int],
    name: str,
    form: Mapping[str, str],
    now: int,
) -> int | None:
    """Start the action; returns the workflow id for workflows, None for state changes."""
    doc, ver = get_version(conn, caller.vault_id, doc_id, *version)
    check_not_locked_by_other(doc, caller)
    action = _action(conn, doc, ver, name)
    requirements = _requirements(conn, doc["lifecycle"], action["name"])
    unmet = [
        s["name"]
        for s in requirements
        if s["scope"] in _DOCUMENT_SCOPES and s.get("required") and _current(ver, s["name"]) is None
    ]
    if unmet:
        raise InvalidData(
            "Entry requirements not met: "
            + ", ".join(f"[{n}] must be set on the document" for n in unmet),
            errors=[
                {"type": "INVALID_DATA", "message": f"Entry requirement [{n}] is not set"}
                for n in unmet
            ],
        )
    activation = {s["name"]: s for s in requirements if s["scope"] == "WorkflowActivation"}
    missing = [
        n for n, s in activation.items() if s.get("required") and not form.get(n, "").strip()
    ]
    if missing:
        raise ParameterRequired.naming(missing)
    unknown = sorted(set(form) - set(activation))
    if unknown:
        raise InvalidData(f"Invalid parameter [{unknown[0]}] for lifecycle action [{name}]")
    inputs = {
        n: _activation_value(conn, caller.vault_id, activation[n], text)
        for n, text in form.items()
        if text.strip()
    }
    target = action["target_state"]
    if target is not None:
        label = conn.execute(
            "SELECT label FROM lifecycle_states WHERE lifecycle = ? AND name = ?",
            (doc["lifecycle"], target),
        ).fetchone()[0]
        conn.execute(
            "UPDATE versions SET status = ? WHERE doc_id = ? AND major = ? AND minor = ?",
            (label, doc_id, *version),
        )
    touch_version(conn, doc_id, *version, caller.user.id, now)
    if action["action_type"] != "workflow":
        return None
    cur = conn.execute(
        "INSERT INTO workflows (doc_id, major, minor, action, inputs, started_by, started_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (doc_id, *version, name, json.dumps(inputs), caller.user.id, now),
    )
    return int(cur.fetchone()[0])
