"""Lists of a million documents: the latest version's modification time on the document,
indexes that give a list page without sorting the vault, and deletions by vault and date.

Revision ID: 0003
Revises: 0002

``documents.modified_ms`` is the ``modified_ms`` of the document's latest version,
kept by triggers (a version inserted or touched, the latest version number moved), so
no code path can forget it. With it the document list sorts and filters on one table:
``documents_vault_modified`` (vault, modified, id) and ``documents_vault_id`` (vault,
id) are the list's two orders, walked in index order. ``document_roles_restricting``
holds only the role rows that make a document restricted (any role but owner), so the
documents a caller may not see are found without reading every document.
``deletions_vault_when`` serves ``GET /objects/deletions/documents`` by date.

``document_list_state`` holds, per vault, the number of documents (the list's total
without counting a million rows) and a generation that every change of the list's
rows or order advances (a document created or deleted, its modification time moved):
a server process keeps where pages begin for as long as the generation stands
(storage/document_list.py). Triggers keep both, in the transaction of the change.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_SET_FROM_VERSION = (
    "UPDATE documents SET modified_ms = NEW.modified_ms"
    " WHERE id = NEW.doc_id AND latest_major = NEW.major AND latest_minor = NEW.minor"
)
_STATE_ROW = (
    "INSERT INTO document_list_state (vault_id, generation, documents)"
    " VALUES ({row}.vault_id, 0, 0) ON CONFLICT DO NOTHING"
)
_STATE_CHANGE = (
    "UPDATE document_list_state SET generation = generation + 1,"
    " documents = documents + {delta} WHERE vault_id = {row}.vault_id"
)
#: (trigger name, event, row, change of the count)
_STATE_TRIGGERS = [
    ("documents_state_insert", "INSERT", "NEW", 1),
    ("documents_state_delete", "DELETE", "OLD", -1),
    ("documents_state_update", "UPDATE OF modified_ms, vault_id", "NEW", 0),
]


def _state_body(row: str, delta: int) -> str:
    return f"{_STATE_ROW.format(row=row)}; {_STATE_CHANGE.format(row=row, delta=delta)};"


_SET_FROM_LATEST = (
    "UPDATE documents SET modified_ms = COALESCE((SELECT v.modified_ms FROM versions v"
    " WHERE v.doc_id = NEW.id AND v.major = NEW.latest_major AND v.minor = NEW.latest_minor),"
    " 0) WHERE id = NEW.id"
)


def _sqlite_triggers() -> None:
    for name, when in (
        ("versions_modified_insert", "AFTER INSERT ON versions"),
        ("versions_modified_update", "AFTER UPDATE OF modified_ms ON versions"),
    ):
        op.execute(f"CREATE TRIGGER {name} {when} BEGIN {_SET_FROM_VERSION}; END")
    for name, event, row, delta in _STATE_TRIGGERS:
        op.execute(
            f"CREATE TRIGGER {name} AFTER {event} ON documents BEGIN {_state_body(row, delta)} END"
        )
    op.execute(
        "CREATE TRIGGER documents_latest_update AFTER UPDATE OF latest_major, latest_minor"
        f" ON documents BEGIN {_SET_FROM_LATEST}; END"
    )


def _postgres_triggers() -> None:
    op.execute(
        "CREATE FUNCTION vaultfs_version_modified() RETURNS trigger LANGUAGE plpgsql AS"
        f" $$ BEGIN {_SET_FROM_VERSION}; RETURN NULL; END $$"
    )
    op.execute(
        "CREATE FUNCTION vaultfs_latest_modified() RETURNS trigger LANGUAGE plpgsql AS"
        f" $$ BEGIN {_SET_FROM_LATEST}; RETURN NULL; END $$"
    )
    op.execute(
        "CREATE TRIGGER versions_modified AFTER INSERT OR UPDATE OF modified_ms ON versions"
        " FOR EACH ROW EXECUTE FUNCTION vaultfs_version_modified()"
    )
    op.execute(
        "CREATE TRIGGER documents_latest_update AFTER UPDATE OF latest_major, latest_minor"
        " ON documents FOR EACH ROW EXECUTE FUNCTION vaultfs_latest_modified()"
    )
    for name, event, row, delta in _STATE_TRIGGERS:
        op.execute(
            f"CREATE FUNCTION vaultfs_{name}() RETURNS trigger LANGUAGE plpgsql AS"
            f" $$ BEGIN {_state_body(row, delta)} RETURN NULL; END $$"
        )
        op.execute(
            f"CREATE TRIGGER {name} AFTER {event} ON documents"
            f" FOR EACH ROW EXECUTE FUNCTION vaultfs_{name}()"
        )


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    kind = "BIGINT" if postgres else "INTEGER"
    op.execute(f"ALTER TABLE documents ADD COLUMN modified_ms {kind} NOT NULL DEFAULT 0")
    op.execute(
        "UPDATE documents SET modified_ms = COALESCE((SELECT v.modified_ms FROM versions v"
        " WHERE v.doc_id = documents.id AND v.major = documents.latest_major"
        " AND v.minor = documents.latest_minor), 0)"
    )
    op.execute(
        f"CREATE TABLE document_list_state (vault_id {kind} PRIMARY KEY,"
        f" generation {kind} NOT NULL, documents {kind} NOT NULL)"
    )
    op.execute(
        "INSERT INTO document_list_state (vault_id, generation, documents)"
        " SELECT vault_id, 0, count(*) FROM documents GROUP BY vault_id"
    )
    if postgres:
        _postgres_triggers()
    else:
        _sqlite_triggers()
    op.execute("CREATE INDEX documents_vault_modified ON documents (vault_id, modified_ms, id)")
    op.execute("CREATE INDEX documents_vault_id ON documents (vault_id, id)")
    op.execute(
        "CREATE INDEX document_roles_restricting ON document_roles (doc_id)"
        " WHERE role != 'owner__v'"
    )
    op.execute("DROP INDEX deletions_when")
    op.execute(
        "CREATE INDEX deletions_vault_when"
        " ON deletions (vault_id, deleted_ms, doc_id, major, minor)"
    )


def downgrade() -> None:
    op.execute("DROP INDEX deletions_vault_when")
    op.execute("CREATE INDEX deletions_when ON deletions (deleted_ms)")
    op.execute("DROP INDEX document_roles_restricting")
    op.execute("DROP INDEX documents_vault_id")
    op.execute("DROP INDEX documents_vault_modified")
    postgres = op.get_bind().dialect.name == "postgresql"
    for name, _event, _row, _delta in _STATE_TRIGGERS:
        op.execute(f"DROP TRIGGER {name} ON documents" if postgres else f"DROP TRIGGER {name}")
        if postgres:
            op.execute(f"DROP FUNCTION vaultfs_{name}()")
    op.execute("DROP TABLE document_list_state")
    if postgres:
        op.execute("DROP TRIGGER documents_latest_update ON documents")
        op.execute("DROP TRIGGER versions_modified ON versions")
        op.execute("DROP FUNCTION vaultfs_latest_modified()")
        op.execute("DROP FUNCTION vaultfs_version_modified()")
    else:
        for name in (
            "documents_latest_update",
            "versions_modified_update",
            "versions_modified_insert",
        ):
            op.execute(f"DROP TRIGGER {name}")
    op.execute("ALTER TABLE documents DROP COLUMN modified_ms")
