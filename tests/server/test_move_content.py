"""``vaultfs serve-admin move-content``: a vault's files from its directory to a bucket
and back, resumable and verified by checksum; the vault then serves them from there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.server.helpers import api_client, assert_ok, upload
from vaultfs.testing.s3_server import S3Server
from vaultfs.testing.vault_process import VaultProcess

FIELDS = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


def move(server: VaultProcess, s3: S3Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vaultfs", "serve-admin", "move-content", *args,
         "--data", str(server.data_dir)],
        env={**os.environ, **s3.env},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip


def _files(server: VaultProcess, made: dict[int, bytes]) -> None:
    client = api_client(server.url)
    for doc_id, content in made.items():
        assert client.get(f"/objects/documents/{doc_id}/file").content == content


def test_move_to_a_bucket_and_back(tmp_path: Path, s3: S3Server) -> None:
    bucket = s3.create_bucket("moved")
    target = f"s3://{bucket}/moved"
    server = VaultProcess(tmp_path / "data", env=s3.env)
    made: dict[int, bytes] = {}
    with server:
        client = api_client(server.url)
        for n, size in enumerate([5, 1000, 9 * 1024 * 1024]):
            content = os.urandom(size)
            r = upload(client, "/objects/documents", {**FIELDS, "name__v": f"Moved {n}"},
                       f"m{n}.bin", content)  # fmt: skip
            made[int(assert_ok(r)["id"])] = content
        stored = {p.name for p in (server.data_dir / "blobs").glob("??/??/*")}

        # While the server runs; the demo vault's files and the three new ones.
        done = move(server, s3, target)
        assert done.returncode == 0, done.stderr
        assert f"copied {len(stored)} files" in done.stdout
        keys = s3.keys(bucket)
        assert {k.rsplit("/", 1)[-1] for k in keys} == stored
        assert all(k.startswith("moved/") for k in keys)

        # Run again: nothing to copy.
        again = move(server, s3, target)
        assert again.returncode == 0, again.stderr
        assert "copied 0 files (0.0 MiB)" in again.stdout
        assert f"{len(stored)} were there already" in again.stdout

    # An earlier run that stopped half-way: what is missing is copied, all verified.
    s3.client().delete_object(Bucket=bucket, Key=sorted(keys)[0])
    resumed = move(server, s3, target, "--verify")
    assert resumed.returncode == 0, resumed.stderr
    assert "copied 1 files" in resumed.stdout
    assert f"{len(stored)} read back and verified" in resumed.stdout

    # The vault serves the files from the bucket now.
    server.extra_args = ["--content", target]
    with server:
        _files(server, made)

    # And back into a directory, from which it serves them again.
    back = tmp_path / "back"
    done = move(server, s3, str(back), "--content", target)
    assert done.returncode == 0, done.stderr
    assert f"copied {len(stored)} files" in done.stdout
    assert {p.name for p in back.glob("??/??/*")} == stored
    server.extra_args = ["--content", str(back)]
    with server:
        _files(server, made)

    # A source file whose bytes are not its name's is reported, never taken for it.
    name = sorted(stored)[0]
    broken = back / name[:2] / name[2:4] / name
    broken.write_bytes(b"not what the name says")
    bad = move(server, s3, f"s3://{bucket}/again", "--content", str(back))
    assert bad.returncode == 1
    assert f"{name}: the source's file does not hold the content its name promises" in bad.stderr
    again = {k.rsplit("/", 1)[-1] for k in s3.keys(bucket, "again/")}
    assert again == stored - {name}
