"""Two server processes on one PostgreSQL database and one content directory, or, as
on two machines, each with a data directory of its own and the files in one bucket.

Any process answers any request: a session made by one is good on the other, and
requests racing through both for one lock, one draft number or one attachment give
exactly one winner each and no duplicates. The API and login limits count calls of
both processes together. With a bucket, each serves the files the other received, and
a restart of both loses nothing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD, EDITOR, login
from tests.server.helpers import API, assert_error, assert_ok, upload
from vaultfs.testing.postgres import PostgresCluster
from vaultfs.testing.s3_server import S3Server
from vaultfs.testing.vault_process import VaultProcess

FIELDS = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


def start_pair(
    cluster: PostgresCluster,
    tmp_path: Path,
    extra_args: list[str] | None = None,
    *,
    s3: S3Server | None = None,
) -> list[VaultProcess]:
    """Two processes on a new database and one data directory, started at once (so
    the first start's schema and demo data are made once, whoever comes first); with
    ``s3``, each has a data directory of its own and the files are in a new bucket."""
    url = cluster.create_database("shared")
    args = ["--database", url, *(extra_args or [])]
    env = dict(cluster.env)
    if s3 is not None:
        args += ["--content", f"s3://{s3.create_bucket('shared')}/team/vault"]
        env.update(s3.env)
    servers = []
    for name in ("a", "b"):
        data = tmp_path / (f"data-{name}" if s3 is not None else "data")
        server = VaultProcess(data, extra_args=args, env=env)
        server.log_path = tmp_path / f"server-{name}.log"
        servers.append(server)
    with ThreadPoolExecutor(2) as pool:
        started = [pool.submit(s.start) for s in servers]
        try:
            for future in started:
                future.result()
        except BaseException:
            for server in servers:
                server.stop()
            raise
    return servers


@pytest.fixture
def pair(postgres: PostgresCluster, tmp_path: Path) -> Iterator[list[VaultProcess]]:
    servers = start_pair(postgres, tmp_path)
    try:
        yield servers
    finally:
        for server in servers:
            server.stop()


def race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls in threads that leave a barrier together."""
    gate = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        gate.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def clients(servers: list[VaultProcess], username: str = ADMIN) -> list[httpx.Client]:
    """One session, used through every process."""
    session = login(servers[0].url, username)
    return [
        httpx.Client(base_url=s.url + API, headers={"Authorization": session}, timeout=60)
        for s in servers
    ]


def new_doc(client: httpx.Client, name: str = "Shared") -> int:
    r = upload(client, "/objects/documents", {**FIELDS, "name__v": name}, "s.txt", b"s")
    return int(assert_ok(r)["id"])


def test_one_demo_vault_and_sessions_good_on_every_process(pair: list[VaultProcess]) -> None:
    a, b = clients(pair)
    listed_a = assert_ok(a.get("/objects/documents", params={"limit": 200}))["documents"]
    listed_b = assert_ok(b.get("/objects/documents", params={"limit": 200}))["documents"]
    # Both started on an empty database; the demo vault was made once.
    assert [d["document"]["id"] for d in listed_a] == [d["document"]["id"] for d in listed_b]
    assert len(listed_a) == 20
    # A session ended on one process is gone on the other.
    session = login(pair[0].url)
    assert_ok(httpx.delete(pair[1].url + API + "/session", headers={"Authorization": session}))
    r = httpx.get(pair[0].url + API + "/objects/documents", headers={"Authorization": session})
    assert_error(r, "INVALID_SESSION_ID")


def test_creates_racing_through_both_processes_are_all_distinct(
    pair: list[VaultProcess],
) -> None:
    a, b = clients(pair)
    calls = [lambda c=c, i=i: new_doc(c, f"Race {i}") for i in range(12) for c in (a, b)]
    ids = race(calls)
    assert len(set(ids)) == len(ids) == 24
    listed = assert_ok(a.get("/objects/documents", params={"limit": 200}))["documents"]
    numbers = [d["document"]["document_number__v"] for d in listed]
    assert len(set(numbers)) == len(numbers)
    assert set(ids) <= {d["document"]["id"] for d in listed}
    # Modification times never repeat, whichever process made the change.
    stamps = [d["document"]["version_modified_date__v"] for d in listed]
    assert len(set(stamps)) == len(stamps)


def test_a_lock_raced_through_both_processes_has_one_winner(pair: list[VaultProcess]) -> None:
    editor = clients(pair, EDITOR)[0]
    admin = clients(pair, ADMIN)[1]
    for _ in range(5):
        url = f"/objects/documents/{new_doc(admin)}/lock"
        bodies = race([lambda c=c: c.post(url).json() for c in (editor, admin)])  # noqa: B023
        statuses = sorted(body["responseStatus"] for body in bodies)
        assert statuses == ["FAILURE", "SUCCESS"], bodies


def test_drafts_raced_through_both_processes_get_distinct_numbers(
    pair: list[VaultProcess],
) -> None:
    a, b = clients(pair)
    doc_id = new_doc(a)

    def draft(client: httpx.Client) -> tuple[int, int]:
        body = assert_ok(
            client.post(f"/objects/documents/{doc_id}", params={"createDraft": "latestContent"})
        )
        return body["major_version_number__v"], body["minor_version_number__v"]

    made = race([lambda c=c: draft(c) for c in (a, b) * 4])
    assert sorted(made) == [(0, n) for n in range(2, 10)]
    versions = assert_ok(a.get(f"/objects/documents/{doc_id}/versions"))["versions"]
    assert [v["number"] for v in versions] == [f"0.{n}" for n in range(1, 10)]


def test_attachment_versions_raced_through_both_processes(pair: list[VaultProcess]) -> None:
    a, b = clients(pair)
    base = f"/objects/documents/{new_doc(a)}/attachments"

    def attach(client: httpx.Client, n: int) -> dict[str, Any]:
        body = assert_ok(client.post(base, files={"file": ("notes.txt", f"v{n}".encode())}))
        return dict(body["data"])

    made = race([lambda c=c, n=n: attach(c, n) for n, c in enumerate((a, b) * 3)])
    # One attachment (same file name), six versions, each number once.
    assert len({m["id"] for m in made}) == 1
    assert sorted(m.get("version__v", 1) for m in made) == [1, 2, 3, 4, 5, 6]
    listing = assert_ok(b.get(base))["data"]
    assert len(listing) == 1 and listing[0]["version__v"] == 6


def test_limits_and_lockout_count_both_processes(postgres: PostgresCluster, tmp_path: Path) -> None:
    servers = start_pair(postgres, tmp_path, ["--burst-limit", "6", "--lockout-attempts", "3"])
    try:
        a, b = clients(servers)
        answers = [c.get("/metadata/objects") for c in (a, b) * 4]
        assert [r.status_code for r in answers[:6]] == [200] * 6
        assert answers[5].headers["X-ServiceAPI-BurstLimitRemaining"] == "0"
        for r in answers[6:]:
            assert_error(r, "API_LIMIT_EXCEEDED", 429)

        def wrong(server: VaultProcess) -> httpx.Response:
            data = {"username": EDITOR, "password": "wrong"}
            return httpx.post(server.url + API + "/auth", data=data)

        assert_error(wrong(servers[0]), "USERNAME_OR_PASSWORD_INCORRECT", 401)
        assert_error(wrong(servers[1]), "USERNAME_OR_PASSWORD_INCORRECT", 401)
        # The third failure locks the account; a wrong password still says only that.
        assert_error(wrong(servers[0]), "USERNAME_OR_PASSWORD_INCORRECT", 401)
        right = {"username": EDITOR, "password": DEMO_PASSWORD}
        assert_error(httpx.post(servers[1].url + API + "/auth", data=right), "USER_LOCKED_OUT")
    finally:
        for server in servers:
            server.stop()


def test_two_machines_serve_each_others_files_from_one_bucket(
    postgres: PostgresCluster, s3: S3Server, tmp_path: Path
) -> None:
    servers = start_pair(postgres, tmp_path, s3=s3)
    try:
        a, b = clients(servers)
        assert servers[0].data_dir != servers[1].data_dir
        made: dict[int, bytes] = {}
        for n, (client, size) in enumerate([(a, 10), (b, 3 * 1024 * 1024 + 5), (a, 9_000_000)]):
            content = os.urandom(size)
            r = upload(client, "/objects/documents", {**FIELDS, "name__v": f"Team {n}"},
                       f"team-{n}.bin", content)  # fmt: skip
            made[int(assert_ok(r)["id"])] = content
        for doc_id, content in made.items():
            for client in (a, b):
                assert client.get(f"/objects/documents/{doc_id}/file").content == content
                part = client.get(
                    f"/objects/documents/{doc_id}/file", headers={"Range": "bytes=3-"}
                )
                assert part.status_code == 206 and part.content == content[3:]
        # A new version received by one is the latest on the other.
        doc_id = next(iter(made))
        assert_ok(upload(b, f"/objects/documents/{doc_id}", {"createDraft": "uploadedContent"},
                         "team-0.bin", b"second"))  # fmt: skip
        assert a.get(f"/objects/documents/{doc_id}/file").content == b"second"
        # Both restart (one after the other, as machines are updated): nothing is lost.
        for server in servers:
            server.stop()
            server.start()
        a, b = clients(servers)
        made[doc_id] = b"second"
        for doc_id, content in made.items():
            assert b.get(f"/objects/documents/{doc_id}/file").content == content
            assert a.get(f"/objects/documents/{doc_id}/file").content == content
    finally:
        for server in servers:
            server.stop()
