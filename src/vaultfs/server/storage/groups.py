"""Groups of users in a vault: what document roles can name besides users.

A group belongs to one vault and has members (users of that vault). Group records
have the shape of the vault service's group object (``name__v``, ``label__v``,
``members__v``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vaultfs.errors import InvalidData, MalformedUrl, ParameterRequired

from .access import parse_ids
from .sql import Conn, Row

__all__ = ["create_group", "delete_group", "group_record", "list_groups", "update_group"]

_EDITABLE = frozenset({"label__v", "name__v", "members__v", "group_description__v"})


def _row(conn: Conn, vault_id: int, group_id: int) -> Row:
    row = conn.execute(
        "SELECT * FROM groups WHERE id = ? AND vault_id = ?", (group_id, vault_id)
    ).fetchone()
    if row is None:
        raise MalformedUrl(f"Group [{group_id}] does not exist")
    return row


def group_record(conn: Conn, vault_id: int, group_id: int) -> dict[str, Any]:
    row = _row(conn, vault_id, group_id)
    members = [
        r[0]
        for r in conn.execute(
            "SELECT user_id FROM group_members WHERE group_id = ? ORDER BY user_id", (group_id,)
        )
    ]
    return {
        "id": row["id"],
        "name__v": row["name"],
        "label__v": row["label"],
        "members__v": members,
        "active__v": True,
        "type__v": "Custom",
        "editable__v": True,
        "system_group__v": False,
    }


def list_groups(conn: Conn, vault_id: int) -> list[dict[str, Any]]:
    ids = [
        r[0]
        for r in conn.execute("SELECT id FROM groups WHERE vault_id = ? ORDER BY id", (vault_id,))
    ]
    return [group_record(conn, vault_id, group_id) for group_id in ids]


def _check_form(form: Mapping[str, str]) -> None:
    for key in form:
        if key not in _EDITABLE:
            raise InvalidData(f"Invalid field [{key}]: groups have {', '.join(sorted(_EDITABLE))}")


def _set_members(conn: Conn, vault_id: int, group_id: int, text: str) -> None:
    members = parse_ids(text, "members__v")
    for user_id in members:
        row = conn.execute(
            "SELECT 1 FROM vault_members WHERE vault_id = ? AND user_id = ?", (vault_id, user_id)
        ).fetchone()
        if row is None:
            raise InvalidData(f"Invalid value for [members__v]: no such user [{user_id}]")
    conn.execute("DELETE FROM group_members WHERE group_id = ?", (group_id,))
    conn.executemany(
        "INSERT INTO group_members (group_id, user_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(group_id, user_id) for user_id in members],
    )


def _name_for(label: str) -> str:
    return (re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_") or "group") + "__c"


def create_group(conn: Conn, vault_id: int, form: Mapping[str, str]) -> int:
    _check_form(form)
    label = form.get("label__v", "").strip()
    if not label:
        raise ParameterRequired("Missing required parameter [label__v]")
    name = form.get("name__v") or _name_for(label)
    if conn.execute(
        "SELECT 1 FROM groups WHERE vault_id = ? AND name = ?", (vault_id, name)
    ).fetchone():
        raise InvalidData(f"Invalid value for [name__v]: a group [{name}] exists already")
    cur = conn.execute(
        "INSERT INTO groups (vault_id, name, label) VALUES (?, ?, ?) RETURNING id",
        (vault_id, name, label),
    )
    group_id = int(cur.fetchone()[0])
    _set_members(conn, vault_id, group_id, form.get("members__v", ""))
    return group_id


def update_group(conn: Conn, vault_id: int, group_id: int, form: Mapping[str, str]) -> None:
    """Change the label and replace the members (``members__v``) of a group."""
    _check_form(form)
    _row(conn, vault_id, group_id)
    if form.get("label__v", "").strip():
        conn.execute("UPDATE groups SET label = ? WHERE id = ?", (form["label__v"], group_id))
    if "members__v" in form:
        _set_members(conn, vault_id, group_id, form["members__v"])


def delete_group(conn: Conn, vault_id: int, group_id: int) -> None:
    """Delete a group. Document roles keep naming it (group ids are never reused), so a
    restricted document never becomes visible to more people by a group's deletion."""
    _row(conn, vault_id, group_id)
    conn.execute("DELETE FROM groups WHERE id = ?", (group_id,))
