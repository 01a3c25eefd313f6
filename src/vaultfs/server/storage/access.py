"""Document roles and who may see and change a document.

The rule (docs/server.md, "Access"): a document is *open* while only ``owner__v`` has
members; every member of the vault sees it and may do what their vault role allows.
Once any other role (``viewer__v``, ``editor__v``, ...) names a user or group, the
document is *restricted*: only admins and the users named in one of its roles
(directly or through a group) see it; of those, only admins, owners and editors may
change it. A document the caller may not see does not exist for them
(``INVALID_DOCUMENT``, and it is left out of every list); one they see but may not
change answers ``INSUFFICIENT_ACCESS``.

The acting user of a request is kept in a context variable (set by
``permissions.require``; trio copies it into the worker threads that run storage
functions). Storage code run without one (the demo, start-up) is not restricted.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from vaultfs.errors import InsufficientAccess, InvalidData, InvalidDocument

from .sql import Conn
from .users import SessionUser

__all__ = [
    "EDITING_ROLES",
    "ROLE_FIELDS",
    "Acting",
    "act_as",
    "acting",
    "add_roles",
    "check",
    "document_roles",
    "hidden_sql",
    "parse_ids",
    "parse_role_key",
    "remove_role",
    "visible_sql",
]

#: Document role fields, in the order records show them.
ROLE_FIELDS = (
    "owner__v",
    "viewer__v",
    "editor__v",
    "approver__v",
    "reviewer__v",
    "consumer__v",
    "coordinator__v",
    "distribution_contacts__v",
)
#: Roles whose members may change a restricted document.
EDITING_ROLES = frozenset({"owner__v", "editor__v", "coordinator__v"})


@dataclass(frozen=True)
class Acting:
    caller: SessionUser
    #: whether the request changes the documents it looks up
    changes: bool


_ACTING: ContextVar[Acting | None] = ContextVar("vaultfs_acting", default=None)


def act_as(caller: SessionUser, *, changes: bool) -> None:
    _ACTING.set(Acting(caller, changes))


def acting() -> Acting | None:
    return _ACTING.get()


def _is_admin(caller: SessionUser) -> bool:
    return caller.user.role == "admin"


def visible_sql(caller: SessionUser, doc_column: str = "d.id") -> tuple[str, list[Any]]:
    """A WHERE condition: the document in ``doc_column`` is visible to the caller."""
    sql = (
        f"(? OR NOT EXISTS (SELECT 1 FROM document_roles r WHERE r.doc_id = {doc_column}"
        " AND r.role != 'owner__v')"
        f" OR EXISTS (SELECT 1 FROM document_roles r WHERE r.doc_id = {doc_column} AND"
        " ((r.kind = 'users' AND r.principal = ?) OR (r.kind = 'groups' AND r.principal IN"
        " (SELECT group_id FROM group_members WHERE user_id = ?)))))"
    )
    user_id = caller.user.id
    return sql, [_is_admin(caller), user_id, user_id]


def _my_roles(conn: Conn, caller: SessionUser, doc_id: int) -> tuple[bool, set[str]]:
    """(is the document restricted, the roles the caller holds on it)."""
    rows = conn.execute(
        "SELECT role, kind, principal FROM document_roles WHERE doc_id = ?", (doc_id,)
    ).fetchall()
    groups = {
        r[0]
        for r in conn.execute(
            "SELECT group_id FROM group_members WHERE user_id = ?", (caller.user.id,)
        )
    }
    restricted = any(r["role"] != "owner__v" for r in rows)
    mine = {
        r["role"]
        for r in rows
        if (r["kind"] == "users" and r["principal"] == caller.user.id)
        or (r["kind"] == "groups" and r["principal"] in groups)
    }
    return restricted, mine


def check(conn: Conn, doc_id: int, *, changes: bool | None = None, owner: bool = False) -> None:
    """Apply the acting user's access to a document.

    ``changes`` None takes the request's own (whether it changes documents);
    ``owner`` asks for owner rights (assigning roles).
    """
    who = acting()
    if who is None or _is_admin(who.caller):
        return
    restricted, mine = _my_roles(conn, who.caller, doc_id)
    if restricted and not mine:
        raise InvalidDocument(f"Document [{doc_id}] does not exist")
    wants_change = who.changes if changes is None else changes
    if owner and "owner__v" not in mine:
        raise InsufficientAccess(f"Only owners of document [{doc_id}] may change its roles")
    if wants_change and restricted and not (mine & EDITING_ROLES):
        raise InsufficientAccess(
            f"User [{who.caller.user.username}] may view but not change document [{doc_id}]"
        )


def document_roles(conn: Conn, doc_id: int) -> dict[str, dict[str, list[int]]]:
    """Every role of the document that has members: ``{role: {users, groups}}``."""
    roles: dict[str, dict[str, list[int]]] = {}
    rows = conn.execute(
        "SELECT role, kind, principal FROM document_roles WHERE doc_id = ?"
        " ORDER BY role, kind, principal",
        (doc_id,),
    )
    for row in rows:
        entry = roles.setdefault(row["role"], {"users": [], "groups": []})
        entry[row["kind"]].append(row["principal"])
    return roles


def parse_role_key(key: str) -> tuple[str, str] | None:
    """``viewer__v.users`` -> (``viewer__v``, ``users``); None for other keys."""
    role, _, kind = key.partition(".")
    if role in ROLE_FIELDS and kind in ("users", "groups"):
        return role, kind
    return None


def _check_principals(conn: Conn, vault_id: int, kind: str, ids: list[int], key: str) -> None:
    for principal in ids:
        if kind == "users":
            row = conn.execute(
                "SELECT 1 FROM vault_members WHERE vault_id = ? AND user_id = ?",
                (vault_id, principal),
            ).fetchone()
        else:
            row = conn.execute(
                "SELECT 1 FROM groups WHERE vault_id = ? AND id = ?", (vault_id, principal)
            ).fetchone()
        if row is None:
            raise InvalidData(f"Invalid value for [{key}]: no such {kind[:-1]} [{principal}]")


def parse_ids(text: str, key: str) -> list[int]:
    ids = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if not (item.isascii() and item.isdigit()):
            raise InvalidData(f"Invalid value for [{key}]: '{item}' is not an id")
        ids.append(int(item))
    return ids


def add_roles(conn: Conn, vault_id: int, doc_id: int, form: dict[str, str]) -> list[str]:
    """Add the users and groups of ``<role>.users`` / ``<role>.groups`` keys; the keys used."""
    used = []
    for key, text in form.items():
        parsed = parse_role_key(key)
        if parsed is None:
            continue
        role, kind = parsed
        ids = parse_ids(text, key)
        _check_principals(conn, vault_id, kind, ids, key)
        conn.executemany(
            "INSERT INTO document_roles (doc_id, role, kind, principal)"
            " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(doc_id, role, kind, principal) for principal in ids],
        )
        used.append(key)
    return used


def remove_role(conn: Conn, doc_id: int, role: str, kind: str, principal: int) -> bool:
    cur = conn.execute(
        "DELETE FROM document_roles WHERE doc_id = ? AND role = ? AND kind = ? AND principal = ?",
        (doc_id, role, kind, principal),
    )
    return cur.rowcount > 0


def hidden_sql(caller: SessionUser) -> tuple[str, list[Any]] | None:
    """A query of the ids of the documents the caller may not see; None for an admin.

    The same rule as ``visible_sql``, read from the other side: only restricted documents
    (a role row other than ``owner__v``, index ``document_roles_restricting``) can be
    hidden, so its cost follows the restricted documents, not the vault.
    """
    if _is_admin(caller):
        return None
    sql = (
        "SELECT h.doc_id FROM document_roles h WHERE h.role != 'owner__v' AND NOT EXISTS"
        " (SELECT 1 FROM document_roles m WHERE m.doc_id = h.doc_id AND"
        " ((m.kind = 'users' AND m.principal = ?) OR (m.kind = 'groups' AND m.principal IN"
        " (SELECT group_id FROM group_members WHERE user_id = ?))))"
    )
    return sql, [caller.user.id, caller.user.id]
