"""The schema of the local vault as releases up to 0.1 made it (frozen; never edit).

Those releases versioned the SQLite file with ``PRAGMA user_version`` (1 to 3), one
script per version. The Alembic baseline revision (``migrations/versions/0001``) runs
these scripts, so a new vault and one made by an older release have the same tables;
``postgres_baseline`` is the same schema in PostgreSQL's types. Later changes are
Alembic revisions, never edits here.
"""

from __future__ import annotations

import re

__all__ = ["LEGACY_VERSION", "MIGRATIONS", "postgres_baseline", "statements"]

_SCHEMA_V1 = """
CREATE TABLE vaults (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    dns TEXT NOT NULL
);
CREATE TABLE users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    -- scrypt hash and its salt (hex)
    password_hash TEXT NOT NULL,
    password_salt TEXT NOT NULL,
    -- admin | editor | viewer (see server/permissions.py)
    role TEXT NOT NULL,
    last_vault_id INTEGER
);
CREATE TABLE vault_members (
    vault_id INTEGER NOT NULL REFERENCES vaults(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    PRIMARY KEY (vault_id, user_id)
);
CREATE TABLE sessions (
    -- sha256 of the session id: the id itself is never stored
    token_hash TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    vault_id INTEGER NOT NULL REFERENCES vaults(id),
    created_ms INTEGER NOT NULL,
    last_used_ms INTEGER NOT NULL
);

-- document types, subtypes and classifications in one tree
CREATE TABLE doc_types (
    name TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    level TEXT NOT NULL CHECK (level IN ('type', 'subtype', 'classification')),
    parent TEXT REFERENCES doc_types(name),
    position INTEGER NOT NULL,
    -- name defaulting rule such as '{filename}', NULL when name__v is required
    name_default TEXT,
    attachments_enabled INTEGER NOT NULL DEFAULT 1,
    lifecycles TEXT NOT NULL DEFAULT '[]'
);
-- field metadata: spec is the JSON of the field metadata record minus the
-- computed parts (shared, usedIn, definedIn)
CREATE TABLE doc_fields (
    name TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    defined_in TEXT REFERENCES doc_types(name),
    spec TEXT NOT NULL
);
CREATE TABLE lifecycles (
    name TEXT PRIMARY KEY,
    label TEXT NOT NULL
);
CREATE TABLE lifecycle_states (
    lifecycle TEXT NOT NULL REFERENCES lifecycles(name),
    name TEXT NOT NULL,
    label TEXT NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (lifecycle, name)
);
CREATE TABLE lifecycle_actions (
    lifecycle TEXT NOT NULL REFERENCES lifecycles(name),
    state TEXT NOT NULL,
    name TEXT NOT NULL,
    label TEXT NOT NULL,
    action_type TEXT NOT NULL CHECK (action_type IN ('workflow', 'stateChange')),
    target_state TEXT,
    PRIMARY KEY (lifecycle, state, name)
);
CREATE TABLE entry_requirements (
    lifecycle TEXT NOT NULL,
    action TEXT NOT NULL,
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    spec TEXT NOT NULL,
    PRIMARY KEY (lifecycle, action, name)
);
CREATE TABLE rendition_types (
    name TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    position INTEGER NOT NULL
);
CREATE TABLE relationship_types (
    name TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    spec TEXT NOT NULL
);
CREATE TABLE event_types (
    name TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    spec TEXT NOT NULL
);

CREATE TABLE documents (
    -- AUTOINCREMENT: ids of deleted documents are never handed out again
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    vault_id INTEGER NOT NULL REFERENCES vaults(id),
    document_number TEXT NOT NULL,
    type TEXT NOT NULL REFERENCES doc_types(name),
    subtype TEXT REFERENCES doc_types(name),
    classification TEXT REFERENCES doc_types(name),
    lifecycle TEXT NOT NULL REFERENCES lifecycles(name),
    created_by INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    latest_major INTEGER NOT NULL,
    latest_minor INTEGER NOT NULL,
    locked_by INTEGER,
    locked_ms INTEGER
);
CREATE TABLE versions (
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    major INTEGER NOT NULL,
    minor INTEGER NOT NULL,
    -- editable field values of this version (JSON object)
    fields TEXT NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    blob TEXT,
    md5 TEXT,
    size INTEGER,
    filename TEXT,
    format TEXT,
    created_by INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    modified_by INTEGER NOT NULL,
    modified_ms INTEGER NOT NULL,
    PRIMARY KEY (doc_id, major, minor)
);
CREATE INDEX versions_modified ON versions (modified_ms);
CREATE TABLE renditions (
    doc_id INTEGER NOT NULL,
    major INTEGER NOT NULL,
    minor INTEGER NOT NULL,
    rendition_type TEXT NOT NULL,
    blob TEXT NOT NULL,
    md5 TEXT NOT NULL,
    size INTEGER NOT NULL,
    filename TEXT NOT NULL,
    format TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (doc_id, major, minor, rendition_type),
    FOREIGN KEY (doc_id, major, minor) REFERENCES versions(doc_id, major, minor)
        ON DELETE CASCADE
);
CREATE TABLE attachments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    created_by INTEGER NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE TABLE attachment_versions (
    attachment_id INTEGER NOT NULL REFERENCES attachments(id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    blob TEXT NOT NULL,
    md5 TEXT NOT NULL,
    size INTEGER NOT NULL,
    filename TEXT NOT NULL,
    format TEXT NOT NULL,
    description TEXT,
    created_by INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (attachment_id, version)
);
CREATE TABLE deletions (
    doc_id INTEGER NOT NULL,
    vault_id INTEGER NOT NULL,
    major INTEGER NOT NULL,
    minor INTEGER NOT NULL,
    deleted_ms INTEGER NOT NULL
);
CREATE INDEX deletions_when ON deletions (deleted_ms);
"""

# Platform: domains, vault status and application, domain admins, login lockout.
_SCHEMA_V2 = """
CREATE TABLE domains (
    name TEXT PRIMARY KEY,
    -- Production | Sandbox | Demo | Test
    type TEXT NOT NULL
);
INSERT INTO domains (name, type) VALUES ('vaultfs', 'Demo');
ALTER TABLE vaults ADD COLUMN domain TEXT NOT NULL DEFAULT 'vaultfs';
ALTER TABLE vaults ADD COLUMN status TEXT NOT NULL DEFAULT 'Active';
ALTER TABLE vaults ADD COLUMN application TEXT NOT NULL DEFAULT 'Platform';
ALTER TABLE vaults ADD COLUMN family_name TEXT;
ALTER TABLE vaults ADD COLUMN family_label TEXT;
ALTER TABLE users ADD COLUMN domain_admin INTEGER NOT NULL DEFAULT 0;
-- consecutive failed password checks (locked_out once they reach the limit)
ALTER TABLE users ADD COLUMN failed_logins INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN locked_out INTEGER NOT NULL DEFAULT 0;
"""

# Document features and access: groups, document roles, relationships, events,
# workflows, favourites, CrossLinks, binders, content text for search, vault settings.
_SCHEMA_V3 = """
CREATE TABLE vault_settings (
    vault_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (vault_id, name)
);
CREATE TABLE groups (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    vault_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    label TEXT NOT NULL,
    UNIQUE (vault_id, name)
);
CREATE TABLE group_members (
    group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    user_id INTEGER NOT NULL,
    PRIMARY KEY (group_id, user_id)
);
-- role assignments of documents; no foreign key on purpose: they outlive the document
-- (ids are never reused) so that the list of deletions honours who could see it
CREATE TABLE document_roles (
    doc_id INTEGER NOT NULL,
    role TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('users', 'groups')),
    principal INTEGER NOT NULL,
    PRIMARY KEY (doc_id, role, kind, principal)
);
CREATE INDEX document_roles_principal ON document_roles (kind, principal);
INSERT INTO document_roles (doc_id, role, kind, principal)
    SELECT id, 'owner__v', 'users', created_by FROM documents;
CREATE TABLE relationships (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_doc INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    source_major INTEGER NOT NULL,
    source_minor INTEGER NOT NULL,
    target_doc INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    target_major INTEGER,
    target_minor INTEGER,
    relationship_type TEXT NOT NULL,
    created_by INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    FOREIGN KEY (source_doc, source_major, source_minor)
        REFERENCES versions(doc_id, major, minor) ON DELETE CASCADE,
    FOREIGN KEY (target_doc, target_major, target_minor)
        REFERENCES versions(doc_id, major, minor) ON DELETE CASCADE
);
CREATE INDEX relationships_target ON relationships (target_doc);
CREATE TABLE document_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    major INTEGER NOT NULL,
    minor INTEGER NOT NULL,
    event_type TEXT NOT NULL,
    event_subtype TEXT NOT NULL,
    classification TEXT NOT NULL,
    event_ms INTEGER NOT NULL,
    created_by INTEGER NOT NULL,
    -- the other properties of the event (JSON object)
    properties TEXT NOT NULL
);
CREATE INDEX document_events_doc ON document_events (doc_id, event_ms);
CREATE TABLE workflows (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    major INTEGER NOT NULL,
    minor INTEGER NOT NULL,
    action TEXT NOT NULL,
    -- the values of the WorkflowActivation entry requirements (JSON object)
    inputs TEXT NOT NULL,
    started_by INTEGER NOT NULL,
    started_ms INTEGER NOT NULL,
    active INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX workflows_doc ON workflows (doc_id, active);
CREATE TABLE favorites (
    user_id INTEGER NOT NULL,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, doc_id)
);
CREATE TABLE crosslinks (
    doc_id INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    source_vault_id INTEGER NOT NULL,
    source_doc_id INTEGER NOT NULL,
    binding_rule TEXT NOT NULL,
    bound_major INTEGER,
    bound_minor INTEGER
);
ALTER TABLE documents ADD COLUMN binder INTEGER NOT NULL DEFAULT 0;
-- text of stored files, by blob (identical content is indexed once)
CREATE VIRTUAL TABLE blob_text USING fts5(sha256 UNINDEXED, body);
"""

#: Schema migrations in order; entry i brings user_version from i to i + 1.
MIGRATIONS: list[str] = [_SCHEMA_V1, _SCHEMA_V2, _SCHEMA_V3]

#: The ``user_version`` the last of these scripts leaves (the Alembic baseline).
LEGACY_VERSION = len(MIGRATIONS)

# PostgreSQL spelling of the baseline: 64-bit integers (millisecond times do not fit
# in 32 bits), identity columns for SQLite's AUTOINCREMENT, a plain table with a
# generated tsvector in place of the FTS5 table (of the first 250,000 characters: a
# tsvector holds at most 1 MB, and an upload must never fail on its text).
_PG_REWRITES: list[tuple[str, str]] = [
    (r"INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
    (r"\bINTEGER\b", "BIGINT"),
    (
        r"CREATE VIRTUAL TABLE blob_text USING fts5\(sha256 UNINDEXED, body\)",
        "CREATE TABLE blob_text (sha256 TEXT PRIMARY KEY, body TEXT NOT NULL,"
        " tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', left(body, 250000))) STORED)",
    ),
]


def postgres_baseline() -> list[str]:
    """The statements of ``MIGRATIONS`` for PostgreSQL."""
    out: list[str] = []
    for script in MIGRATIONS:
        for statement in statements(script):
            for pattern, replacement in _PG_REWRITES:
                statement = re.sub(pattern, replacement, statement)
            out.append(statement)
    out.append("CREATE INDEX blob_text_tsv ON blob_text USING GIN (tsv)")
    return out


def statements(script: str) -> list[str]:
    """Split a schema script into statements (the schema has no ';' inside strings;
    ``--`` comments are dropped first, so they may contain one)."""
    code = "\n".join(line.partition("--")[0] for line in script.splitlines())
    return [s.strip() for s in code.split(";") if s.strip()]
