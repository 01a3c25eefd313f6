"""Vaults and domains: host names, domain information, the second demo vault.

Every vault belongs to a domain and has a DNS name (``vaults.dns``); the host name a
request is addressed to picks the vault whose DNS it is. Vault ids grow with creation,
so "oldest" means lowest id. Document metadata (types, fields, lifecycles) is shared
by the vaults of a server; documents, sessions and call limits are per vault.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .changes import create_document
from .content import StoredFile
from .sql import Conn, Row
from .users import SessionUser, User

__all__ = [
    "add_second_demo_vault",
    "default_vault",
    "domain_information",
    "user_domains",
    "vault_hosts",
]

_SECOND_VAULT_DNS = "clinical.localhost"
_SECOND_VAULT_DOCS = [
    ("Site Activation Checklist", "site-activation-checklist.txt"),
    ("Monitoring Plan", "monitoring-plan.txt"),
]


def vault_hosts(conn: Conn) -> dict[str, int]:
    """DNS name (lower case) -> id of every active vault."""
    rows = conn.execute("SELECT id, dns FROM vaults WHERE status = 'Active'").fetchall()
    return {row["dns"].lower(): row["id"] for row in rows}


def default_vault(conn: Conn) -> int:
    """The oldest active vault (what a host name that is no vault's DNS addresses)."""
    row = conn.execute("SELECT min(id) FROM vaults WHERE status = 'Active'").fetchone()
    return int(row[0] or 1)


def _vault_record(row: Row, include_application: bool) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": str(row["id"]),
        "vault_name__v": row["name"],
        "vault_status__v": row["status"],
    }
    if include_application:
        record["vault_application__v"] = row["application"]
    if row["family_name"]:
        record["vault_family__v"] = {"name__v": row["family_name"], "label__v": row["family_label"]}
    return record


def domain_information(conn: Conn, vault_id: int, include_application: bool) -> dict[str, Any]:
    """The ``domain__v`` object of the domain of ``vault_id``."""
    domain = conn.execute(
        "SELECT d.* FROM domains d JOIN vaults v ON v.domain = d.name WHERE v.id = ?",
        (vault_id,),
    ).fetchone()
    vaults = conn.execute(
        "SELECT * FROM vaults WHERE domain = ? ORDER BY id", (domain["name"],)
    ).fetchall()
    return {
        "domain_name__v": domain["name"],
        "domain_type__v": domain["type"],
        "vaults__v": [_vault_record(row, include_application) for row in vaults],
    }


def user_domains(conn: Conn, user_id: int) -> list[dict[str, str]]:
    """``{name, type}`` of every domain where the user is a member of a vault."""
    rows = conn.execute(
        "SELECT DISTINCT d.name, d.type FROM domains d JOIN vaults v ON v.domain = d.name"
        " JOIN vault_members m ON m.vault_id = v.id WHERE m.user_id = ? ORDER BY d.name",
        (user_id,),
    ).fetchall()
    return [{"name": row["name"], "type": row["type"]} for row in rows]


def add_second_demo_vault(
    conn: Conn,
    store: Callable[[bytes, str], StoredFile],
    first_vault: int,
    admin_name: str,
    members: list[str],
    now: int,
) -> int:
    """Describe the demo vault ``first_vault`` and add a second, small one beside it.

    The admin is a domain admin; ``members`` (user names) may use the second vault,
    which holds two documents. Returns the new vault's id.
    """
    conn.execute(
        "UPDATE vaults SET application = 'PromoMats', family_name = 'commercial__v',"
        " family_label = 'Commercial' WHERE id = ?",
        (first_vault,),
    )
    # The id is chosen here, not by the database: vault ids are few and given by
    # hand elsewhere (the demo vault is 1), which an identity column would not know.
    vault_id = int(conn.execute("SELECT coalesce(max(id), 0) + 1 FROM vaults").fetchone()[0])
    conn.execute(
        "INSERT INTO vaults (id, name, dns, application, family_name, family_label)"
        " VALUES (?, 'vaultfs Clinical Vault', ?, 'eTMF', 'clinical_operations__v',"
        " 'Clinical Operations')",
        (vault_id, _SECOND_VAULT_DNS),
    )
    conn.execute("UPDATE users SET domain_admin = 1 WHERE username = ?", (admin_name,))
    rows = conn.execute(
        f"SELECT * FROM users WHERE username IN ({','.join('?' * len(members))})", members
    ).fetchall()
    conn.executemany(
        "INSERT INTO vault_members (vault_id, user_id) VALUES (?, ?)",
        [(vault_id, row["id"]) for row in rows],
    )
    admin_row = conn.execute("SELECT * FROM users WHERE username = ?", (admin_name,)).fetchone()
    author = SessionUser(
        User(admin_row["id"], admin_row["username"], admin_row["display_name"], "admin"),
        vault_id,
        "",
        0,
    )
    for offset, (name, filename) in enumerate(_SECOND_VAULT_DOCS):
        content = f"{name}\n\nA document of the second demo vault.\n".encode()
        create_document(
            conn,
            author,
            {"name__v": name, "type__v": "General", "lifecycle__v": "General Lifecycle"},
            store(content, filename),
            now + offset,
        )
    return vault_id
