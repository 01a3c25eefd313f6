"""Content stores: documents created per second, and a large file uploaded and
downloaded in MiB/s, with the files in an S3-compatible bucket against the directory.

Apart from the mount: two vaults of their own, one process on SQLite each, one with
the files in its data directory (the reference column, the default) and one with the
files in a bucket of moto's S3 server on loopback (vaultfs.testing.s3_server), both
measured in the same run. Creates are small files sent by ``_CLIENTS`` threads; the
large file is ``cp_bytes``, sent once and read back ``repeats`` times (the median is
reported). moto is a Python server that keeps objects in memory: against a real
object store the network decides, so read the bucket's figures as what the server's
side of the path costs, not as a service's speed.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import httpx

from vaultfs.testing.s3_server import S3Server
from vaultfs.testing.vault_process import ADMIN, DEMO_PASSWORD, VaultProcess
from vaultfs.wire import API_VERSION

from ..context import Context
from ..results import Row
from ..sizes import MiB
from .servers import _SERVER_ARGS, _create, _rate

__all__ = ["figures", "run"]

_FIELDS = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


def _session(server: VaultProcess) -> str:
    answer = httpx.post(f"{server.url}/api/{API_VERSION}/auth",
                        data={"username": ADMIN, "password": DEMO_PASSWORD})  # fmt: skip
    return str(answer.json()["sessionId"])


def _big_file(path: Path, size: int) -> None:
    with path.open("wb") as f:
        for _ in range(size // MiB):
            f.write(os.urandom(MiB))
        f.write(os.urandom(size % MiB))


def measure(
    server: VaultProcess, big: Path, count: int, repeats: int
) -> tuple[float, float, float]:
    """(creates/s, upload MiB/s, download MiB/s) of one started vault."""
    session = _session(server)
    creates = _rate([server.url], session, count, _create)
    size = big.stat().st_size
    with httpx.Client(base_url=f"{server.url}/api/{API_VERSION}",
                      headers={"Authorization": session}, timeout=600) as client:  # fmt: skip
        start = time.perf_counter()
        with big.open("rb") as f:
            r = client.post("/objects/documents", data={**_FIELDS, "name__v": "Big"},
                            files={"file": ("big.bin", f)})  # fmt: skip
        upload = size / MiB / (time.perf_counter() - start)
        if r.json().get("responseStatus") != "SUCCESS":
            raise RuntimeError(f"upload failed: {r.text[:300]}")
        doc_id = r.json()["id"]
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            got = 0
            with client.stream("GET", f"/objects/documents/{doc_id}/file") as answer:
                for chunk in answer.iter_bytes(MiB):
                    got += len(chunk)
            times.append(time.perf_counter() - start)
            if got != size:
                raise RuntimeError(f"downloaded {got} bytes of {size}")
    return creates, upload, size / MiB / statistics.median(times)


def figures(workdir: Path, count: int, size: int, repeats: int) -> dict[str, tuple[float, ...]]:
    """Both stores' figures, by label."""
    big = workdir / "content-big.bin"
    _big_file(big, size)
    found: dict[str, tuple[float, ...]] = {}
    with VaultProcess(workdir / "content-dir", extra_args=list(_SERVER_ARGS)) as server:
        found["directory"] = measure(server, big, count, repeats)
    s3 = S3Server(workdir)
    try:
        s3.start()
        args = [*_SERVER_ARGS, "--content", f"s3://{s3.create_bucket('bench')}/vault"]
        with VaultProcess(workdir / "content-s3", extra_args=args, env=s3.env) as server:
            found["S3 bucket"] = measure(server, big, count, repeats)
    finally:
        s3.stop()
        big.unlink(missing_ok=True)
    return found


def run(ctx: Context) -> list[Row]:
    size = ctx.sizes.cp_bytes
    found = figures(ctx.workdir, 100 * ctx.sizes.repeats, size, ctx.sizes.repeats)
    base, bucket = found["directory"], found["S3 bucket"]
    big = f"{size // MiB} MiB"
    return [
        Row("content: creates/s, S3 bucket (moto) vs directory", f"{bucket[0]:.1f}/s",
            f"{base[0]:.1f}/s", bucket[0] / base[0], None),
        Row(f"content: upload of {big}, S3 bucket (moto) vs directory", f"{bucket[1]:.0f} MiB/s",
            f"{base[1]:.0f} MiB/s", bucket[1] / base[1], None),
        Row(f"content: download of {big}, S3 bucket (moto) vs directory",
            f"{bucket[2]:.0f} MiB/s", f"{base[2]:.0f} MiB/s", bucket[2] / base[2], None),
    ]  # fmt: skip
