"""The demo vault: what an empty data directory is filled with on first start.

One vault with three users (admin, editor, viewer) who sign in with a password, a
fourth (``sso@vaultfs.demo``, an editor) who has no usable password and signs in through
an identity provider when the data directory has an OAuth profile for them (``vaultfs
demo`` writes one; see docs/user-guide.md), and a group (Approvers: the editor),
three document types at different depths, a lifecycle with an approve state
change and a workflow, rendition, relationship and event types (with classifications
and properties per event subtype), and about twenty documents with several versions,
real files of several formats, viewable renditions, a few attachments and three
relationships (one to a version of its target). Some names
are awkward on purpose (a ``/``, unicode, two documents with the same name).

The metadata is ``demo_metadata``'s, the documents and relationships
``demo_documents``'; this module adds the users and the group, and fills an empty
database. Everything is created in one transaction: a crash during the first start leaves an
empty database, filled again at the next start.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from pathlib import Path

from .config import ServerConfig
from .demo_documents import DAY_MS, add_documents, add_relationships
from .demo_metadata import DEMO_VAULT_ID, add_metadata
from .storage import groups, search, users
from .storage.content import ContentStore, StoredFile
from .storage.db import Database, now_ms

__all__ = ["DEMO_SSO_USER", "DEMO_USERS", "ensure_demo_vault", "referenced_blobs"]

#: (user name, display name, role)
DEMO_USERS = [
    ("admin@vaultfs.demo", "Ada Admin", "admin"),
    ("editor@vaultfs.demo", "Eddie Editor", "editor"),
    ("viewer@vaultfs.demo", "Vera Viewer", "viewer"),
]
#: (user name, display name, role) of the demo user who signs in through single
#: sign-on: their vault password is random and kept nowhere
DEMO_SSO_USER = ("sso@vaultfs.demo", "Sam Sso", "editor")


def referenced_blobs(conn: sqlite3.Connection) -> set[str]:
    """Every blob a record points at (what the startup sweep keeps)."""
    rows = conn.execute(
        "SELECT blob FROM versions WHERE blob IS NOT NULL UNION SELECT blob FROM renditions"
        " UNION SELECT blob FROM attachment_versions"
    ).fetchall()
    return {r[0] for r in rows}


def _password(config: ServerConfig) -> str:
    """The demo password: configured, or generated and kept in a 0600 file, whose path
    is printed (never the password: the output usually ends up in a log file)."""
    if config.demo_password:
        return config.demo_password
    password = secrets.token_urlsafe(12)
    path: Path = config.data_dir / "demo-credentials"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("".join(f"{name}\t{password}\n" for name, _, _ in DEMO_USERS))
    print(
        f"Demo vault created. Users {', '.join(n for n, _, _ in DEMO_USERS)}; "
        f"their password is in {path} (mode 0600)",
        flush=True,
    )
    return password


def ensure_demo_vault(db: Database, blobs: ContentStore, config: ServerConfig) -> bool:
    """Fill an empty database with the demo vault (blocking); False when not empty."""
    if db.read_sync(lambda conn: conn.execute("SELECT count(*) FROM vaults").fetchone()[0]):
        return False
    password = _password(config)

    texts: dict[str, str | None] = {}

    def store(data: bytes, filename: str) -> StoredFile:
        stored = StoredFile(blob=blobs.put_bytes(data), filename=filename)
        texts[stored.blob.sha256] = search.extract_text(data, filename)
        return stored

    def fill(conn: sqlite3.Connection) -> None:
        add_metadata(conn)
        people: dict[str, users.SessionUser] = {}
        for username, display, role in DEMO_USERS:
            user_id = users.add_user(conn, username, display, password, role, [DEMO_VAULT_ID])
            people[role] = users.SessionUser(
                users.User(user_id, username, display, role), DEMO_VAULT_ID, "", 0
            )
        sso_name, sso_display, sso_role = DEMO_SSO_USER
        users.add_user(
            conn, sso_name, sso_display, secrets.token_urlsafe(32), sso_role, [DEMO_VAULT_ID]
        )
        groups.create_group(
            conn,
            DEMO_VAULT_ID,
            {"label__v": "Approvers", "members__v": str(people["editor"].user.id)},
        )
        add_documents(conn, store, people, now_ms() - 30 * DAY_MS)
        add_relationships(conn, people["editor"].user.id, now_ms() - DAY_MS)
        for sha256, text in texts.items():
            search.index_text(conn, sha256, text)

    db.write_sync(fill)
    return True
