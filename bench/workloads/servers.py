"""Server throughput: documents created and list pages served per second, by backend
and number of server processes.

Apart from the mount: each configuration gets vaults of its own (one SQLite process;
PostgreSQL with 1, 2 and 4 processes on one database and one content directory, from a
throwaway cluster), and clients spread their requests round-robin over the processes,
as a load balancer would. ``_CLIENTS`` threads keep requests in flight. The reference
column is one process on SQLite, the default; the ratio is the figure over it. On a
machine with few cores the clients, the servers and PostgreSQL share them, which caps
what more processes can add: read the figures with the core count of the run.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from vaultfs.testing.postgres import PostgresCluster
from vaultfs.testing.vault_process import ADMIN, DEMO_PASSWORD, VaultProcess
from vaultfs.wire import API_VERSION

from ..context import Context
from ..results import Row

__all__ = ["run"]

_CLIENTS = 8
_SERVER_ARGS = ["--burst-limit", "100000000", "--daily-limit", "1000000000"]
_FIELDS = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


def _servers(workdir: Path, processes: int, cluster: PostgresCluster | None) -> list[VaultProcess]:
    data = workdir / f"servers-{'pg' if cluster else 'sqlite'}-{processes}"
    args = list(_SERVER_ARGS)
    env: dict[str, str] = {}
    if cluster is not None:
        args += ["--database", cluster.create_database("bench")]
        env = cluster.env
    servers = []
    for n in range(processes):
        server = VaultProcess(data, extra_args=args, env=env)
        server.log_path = workdir / f"{data.name}-{n}.log"
        servers.append(server)
    return servers


def _rate(
    urls: list[str], session: str, count: int, call: Callable[[httpx.Client, int], None]
) -> float:
    """Calls per second: ``count`` calls by ``_CLIENTS`` threads, round-robin over urls."""
    turn = itertools.count()
    clients = [
        httpx.Client(base_url=f"{url}/api/{API_VERSION}", headers={"Authorization": session},
                     timeout=120)
        for url in urls
    ]  # fmt: skip

    def worker(_: int) -> None:
        while (n := next(turn)) < count:
            call(clients[n % len(clients)], n)

    start = time.perf_counter()
    with ThreadPoolExecutor(_CLIENTS) as pool:
        list(pool.map(worker, range(_CLIENTS)))
    elapsed = time.perf_counter() - start
    for client in clients:
        client.close()
    return count / elapsed


def _create(client: httpx.Client, n: int) -> None:
    r = client.post("/objects/documents", data={**_FIELDS, "name__v": f"Bench {n}"},
                    files={"file": (f"b{n}.txt", f"bench document {n}\n".encode())})  # fmt: skip
    if r.json().get("responseStatus") != "SUCCESS":
        raise RuntimeError(f"create failed: {r.text[:300]}")


def _list(client: httpx.Client, n: int) -> None:
    r = client.get("/objects/documents", params={"limit": 200, "start": 0})
    if r.json().get("responseStatus") != "SUCCESS":
        raise RuntimeError(f"list failed: {r.text[:300]}")


def measure(workdir: Path, processes: int, cluster: PostgresCluster | None,
            count: int) -> tuple[float, float]:  # fmt: skip
    """(documents created per second, list pages per second) of one configuration."""
    servers = _servers(workdir, processes, cluster)
    try:
        # The first process makes the schema and the demo vault; the others join it.
        servers[0].start()
        with ThreadPoolExecutor(len(servers)) as pool:
            list(pool.map(lambda s: s.start(), servers[1:]))
        answer = httpx.post(f"{servers[0].url}/api/{API_VERSION}/auth",
                            data={"username": ADMIN, "password": DEMO_PASSWORD})  # fmt: skip
        session = answer.json()["sessionId"]
        urls = [s.url for s in servers]
        creates = _rate(urls, session, count, _create)
        pages = _rate(urls, session, count, _list)
        return creates, pages
    finally:
        for server in servers:
            server.stop()


def figures(workdir: Path, count: int) -> dict[str, tuple[float, float]]:
    """Every configuration's figures, by label."""
    found = {"SQLite, 1 process": measure(workdir, 1, None, count)}
    cluster = PostgresCluster()
    try:
        cluster.start()
        for processes in (1, 2, 4):
            label = f"PostgreSQL, {processes} process{'es' if processes > 1 else ''}"
            found[label] = measure(workdir, processes, cluster, count)
    finally:
        cluster.stop()
    return found


def run(ctx: Context) -> list[Row]:
    count = 100 * ctx.sizes.repeats
    found = figures(ctx.workdir, count)
    base_creates, base_pages = found["SQLite, 1 process"]
    rows = []
    for label, (creates, pages) in found.items():
        rows.append(Row(f"servers: creates/s, {label}", f"{creates:.1f}/s",
                        f"{base_creates:.1f}/s", creates / base_creates, None))  # fmt: skip
        rows.append(Row(f"servers: list pages (200)/s, {label}", f"{pages:.1f}/s",
                        f"{base_pages:.1f}/s", pages / base_pages, None))  # fmt: skip
    return rows
