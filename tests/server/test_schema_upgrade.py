"""Schema upgrades: a vault made by an older release opens with this one, whole.

``fixtures/vault-0.1.tar.gz`` is a data directory made by release 0.1 (the schema of
``PRAGMA user_version`` 3, before Alembic): the demo vault plus one document created
over HTTP. Keep it as it is: it stands for vaults in the field.
"""

from __future__ import annotations

import sqlite3
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from tests.server.helpers import api_client, assert_ok, upload
from vaultfs.server.storage import legacy_schema, schema
from vaultfs.server.storage.db import Database
from vaultfs.testing.postgres import PostgresCluster
from vaultfs.testing.vault_process import VaultProcess

FIXTURE = Path(__file__).with_name("fixtures") / "vault-0.1.tar.gz"
#: what release 0.1 stored in the fixture
KEPT_ID = 23
KEPT_BYTES = b"every byte of this file survives the upgrade\n"


def _sqlite_meta(path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


def test_a_vault_of_release_0_1_upgrades_and_keeps_everything(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(data, filter="data")
    file = data / "vault.sqlite3"
    # Really the old format: user_version 3 and no Alembic table.
    assert _sqlite_meta(file, "PRAGMA user_version") == [(3,)]
    assert not _sqlite_meta(file, "SELECT 1 FROM sqlite_master WHERE name = 'alembic_version'")

    with VaultProcess(data) as server:
        client = api_client(server.url)
        listed = assert_ok(client.get("/objects/documents", params={"limit": 200}))
        ids = [d["document"]["id"] for d in listed["documents"]]
        assert len(ids) == 21 and KEPT_ID in ids
        kept = assert_ok(client.get(f"/objects/documents/{KEPT_ID}"))["document"]
        assert kept["name__v"] == "Kept across upgrades"
        assert client.get(f"/objects/documents/{KEPT_ID}/file").content == KEPT_BYTES
        # Ids go on after the old ones (AUTOINCREMENT's memory survived).
        created = upload(
            client,
            "/objects/documents",
            {"name__v": "After", "type__v": "General", "lifecycle__v": "General Lifecycle"},
            "after.txt",
            b"new\n",
        )
        assert assert_ok(created)["id"] == KEPT_ID + 1

    assert _sqlite_meta(file, "SELECT version_num FROM alembic_version") == [
        (schema.head_revision(),)
    ]


def test_an_older_user_version_runs_its_remaining_scripts_first(tmp_path: Path) -> None:
    file = tmp_path / "v.sqlite3"
    with sqlite3.connect(file) as db:
        for statement in legacy_schema.statements(legacy_schema.MIGRATIONS[0]):
            db.execute(statement)
        db.execute("INSERT INTO vaults (id, name, dns) VALUES (1, 'Old', 'old.example')")
        db.execute("PRAGMA user_version = 1")
    database = Database(file)
    database.open()
    try:
        row = database.read_sync(
            lambda conn: conn.execute("SELECT name, status, domain FROM vaults").fetchone()
        )
        # Columns of user_version 2 arrived with their defaults.
        assert tuple(row) == ("Old", "Active", "vaultfs")
    finally:
        database.close()
    assert _sqlite_meta(file, "PRAGMA user_version") == [(3,)]
    assert _sqlite_meta(file, "SELECT version_num FROM alembic_version") == [
        (schema.head_revision(),)
    ]


@pytest.fixture(params=["sqlite", "postgresql"])
def database_target(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, str | None]]:
    """(SQLAlchemy URL, password) of an empty database on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'v.sqlite3'}", None
        return
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    yield cluster.create_database("upgrade"), cluster.password


def test_a_baseline_database_upgrades_to_the_newest_revision(
    database_target: tuple[str, str | None],
) -> None:
    url, password = database_target
    engine_url = url.replace("postgresql://", "postgresql+psycopg://")
    engine = create_engine(
        engine_url, connect_args={"password": password} if password is not None else {}
    )
    try:
        with engine.begin() as conn:
            schema.upgrade(conn, schema.BASELINE)
            conn.exec_driver_sql(
                "INSERT INTO vaults (id, name, dns) VALUES (1, 'Baseline', 'b.example')"
            )
    finally:
        engine.dispose()
    database = Database(url, password=password) if password else Database(Path(url[10:]))
    database.open()
    try:
        name = database.read_sync(
            lambda conn: conn.execute("SELECT name FROM vaults WHERE id = 1").fetchone()[0]
        )
        assert name == "Baseline"
        assert database.tick() < database.tick()
        with database.engine.connect() as conn:
            assert schema.current_revision(conn) == schema.head_revision()
    finally:
        database.close()


def test_revision_0002_upgrades_with_list_state_and_modification_times(
    database_target: tuple[str, str | None],
) -> None:
    """Documents made at 0002 get their latest version's modification time and their
    vault's count; later changes keep both (the triggers of 0003)."""
    url, password = database_target
    old = Database(url, password=password) if password else Database(Path(url[10:]))
    old.open("0002")

    def fill(conn: Any) -> None:
        conn.execute("INSERT INTO vaults (id, name, dns) VALUES (1, 'Old', 'o.example')")
        conn.execute(
            "INSERT INTO doc_types (name, label, level, position) VALUES ('t', 'T', 'type', 0)"
        )
        conn.execute("INSERT INTO lifecycles (name, label) VALUES ('l', 'L')")
        for doc_id, latest in ((1, 2), (2, 1)):
            conn.execute(
                "INSERT INTO documents (id, vault_id, document_number, type, lifecycle,"
                " created_by, created_ms, latest_major, latest_minor)"
                " VALUES (?, 1, ?, 't', 'l', 1, 5, 0, ?)",
                (doc_id, f"N{doc_id}", latest),
            )
            for minor in range(1, latest + 1):
                conn.execute(
                    "INSERT INTO versions (doc_id, major, minor, fields, name, status,"
                    " created_by, created_ms, modified_by, modified_ms)"
                    " VALUES (?, 0, ?, '{}', 'n', 's', 1, 5, 1, ?)",
                    (doc_id, minor, 1000 * doc_id + minor),
                )

    old.write_sync(fill)
    old.close()
    database = Database(url, password=password) if password else Database(Path(url[10:]))
    database.open()
    try:

        def read(conn: Any) -> tuple[list[tuple[int, int]], tuple[int, int]]:
            times = conn.execute("SELECT id, modified_ms FROM documents ORDER BY id").fetchall()
            state = conn.execute(
                "SELECT generation, documents FROM document_list_state WHERE vault_id = 1"
            ).fetchone()
            return [tuple(r) for r in times], tuple(state)

        times, state = database.read_sync(read)
        assert times == [(1, 1002), (2, 2001)] and state == (0, 2)

        def change(conn: Any) -> None:
            conn.execute("UPDATE versions SET modified_ms = 7000 WHERE doc_id = 2")
            conn.execute("UPDATE documents SET latest_minor = 1 WHERE id = 1")
            conn.execute("DELETE FROM documents WHERE id = 2")

        database.write_sync(change)
        times, state = database.read_sync(read)
        assert times == [(1, 1001)]
        # three changes of the list (a time moved twice, a deletion); one document left
        assert state[0] >= 3 and state[1] == 1
        with database.engine.connect() as conn:
            assert schema.current_revision(conn) == schema.head_revision()
    finally:
        database.close()
