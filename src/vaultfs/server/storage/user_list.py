"""The users of a vault as the user requests show them (``GET /objects/users``).

Records have the shape of the vault service's user object: ``id``, ``user_name__v``
(the login name), ``user_email__v`` (the same: local user names are e-mail
addresses), ``user_first_name__v``/``user_last_name__v`` (the display name split at
its first space), ``active__v``. Only members of the vault are listed; password data
never leaves storage.
"""

from __future__ import annotations

from typing import Any

from vaultfs.errors import MalformedUrl

from .sql import Conn, Row

__all__ = ["list_users", "user_record"]

_SELECT = (
    "SELECT u.id, u.username, u.display_name FROM users u"
    " JOIN vault_members m ON m.user_id = u.id WHERE m.vault_id = ?"
)


def _record(row: Row) -> dict[str, Any]:
    first, _, last = str(row["display_name"]).partition(" ")
    return {
        "id": row["id"],
        "user_name__v": row["username"],
        "user_email__v": row["username"],
        "user_first_name__v": first,
        "user_last_name__v": last,
        "active__v": True,
    }


def list_users(conn: Conn, vault_id: int) -> list[dict[str, Any]]:
    return [_record(r) for r in conn.execute(_SELECT + " ORDER BY u.id", (vault_id,))]


def user_record(conn: Conn, vault_id: int, user_id: int) -> dict[str, Any]:
    row = conn.execute(_SELECT + " AND u.id = ?", (vault_id, user_id)).fetchone()
    if row is None:
        raise MalformedUrl(f"User [{user_id}] does not exist")
    return _record(row)
