"""``vaultfs serve-admin backup`` while the server runs, and ``restore``, both backends
(a vault whose files are in a bucket restores into a new bucket).

A backup taken between two creates holds the first and not the second; restored into
a new database (the same backend or the other one) and a new data directory, a server
serves the first document with its exact bytes, and ids go on past every id the
backed-up vault ever handed out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.backends import bucket_of
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from vaultfs.testing.postgres import PostgresCluster
from vaultfs.testing.s3_server import S3Server
from vaultfs.testing.vault_process import VaultProcess

#: Files are what these tests are about: they run with the files in a bucket too.
pytestmark = pytest.mark.content_stores

FIELDS = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


def admin(server: VaultProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``vaultfs serve-admin ...`` for the server's data directory, database and
    content store."""
    args_ = server.extra_args
    database = args_[args_.index("--database") :][:2] if "--database" in args_ else []
    content = args_[args_.index("--content") :][:2] if "--content" in args_ else []
    return subprocess.run(
        [sys.executable, "-m", "vaultfs", "serve-admin", *args,
         "--data", str(server.data_dir), *database, *content],
        env=dict(os.environ, **server.env),
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip


def target_server(
    backend: str, data: Path, request: pytest.FixtureRequest, *, in_bucket: bool
) -> VaultProcess:
    """A new vault on ``backend``; ``in_bucket``: its files in a new bucket."""
    args: list[str] = []
    env: dict[str, str] = {}
    if backend == "postgresql":
        cluster: PostgresCluster = request.getfixturevalue("postgres")
        args += ["--database", cluster.create_database("restored")]
        env.update(cluster.env)
    if in_bucket:
        s3: S3Server = request.getfixturevalue("s3")
        args += ["--content", f"s3://{s3.create_bucket('restored')}/restored"]
        env.update(s3.env)
    return VaultProcess(data, extra_args=args, env=env)


@pytest.mark.parametrize("restore_into", ["sqlite", "postgresql"])
def test_backup_while_running_then_restore(
    fresh_vault: VaultProcess, restore_into: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    client = api_client(fresh_vault.url)
    fields = {**FIELDS, "name__v": "In the backup"}
    kept = assert_ok(upload(client, "/objects/documents", fields, "kept.bin", b"\x00kept\xff"))
    gone = assert_ok(upload(client, "/objects/documents", {**FIELDS, "name__v": "Deleted"},
                            "gone.txt", b"gone"))  # fmt: skip
    assert_ok(client.delete(f"/objects/documents/{gone['id']}"))

    archive = tmp_path / "vault-backup.tar.gz"
    done = admin(fresh_vault, "backup", str(archive))
    assert done.returncode == 0, done.stderr
    assert archive.stat().st_mode & 0o077 == 0
    # The server kept serving; what it does after the backup is not in it.
    later = assert_ok(upload(client, "/objects/documents", {**FIELDS, "name__v": "After"},
                             "after.txt", b"after"))  # fmt: skip
    # An archive is never overwritten.
    assert admin(fresh_vault, "backup", str(archive)).returncode != 0

    in_bucket = bucket_of(fresh_vault) is not None
    restored = target_server(restore_into, tmp_path / "restored", request, in_bucket=in_bucket)
    done = admin(restored, "restore", str(archive))
    assert done.returncode == 0, done.stderr
    # Restoring over a vault is refused.
    assert admin(restored, "restore", str(archive)).returncode != 0
    with restored:
        other = api_client(restored.url)
        doc = assert_ok(other.get(f"/objects/documents/{kept['id']}"))["document"]
        assert doc["name__v"] == "In the backup"
        assert other.get(f"/objects/documents/{kept['id']}/file").content == b"\x00kept\xff"
        assert_error(other.get(f"/objects/documents/{later['id']}"), "INVALID_DOCUMENT")
        # The deleted document's id is never handed out again.
        again = assert_ok(upload(other, "/objects/documents", {**FIELDS, "name__v": "New"},
                                 "new.txt", b"new"))  # fmt: skip
        assert again["id"] > gone["id"]
