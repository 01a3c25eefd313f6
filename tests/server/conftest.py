"""Server tests run on every backend: the vault fixtures are parametrised by database
and content store.

``vault_server`` and ``fresh_vault`` (see tests/conftest.py) come here in kinds named
``DATABASE[+s3]``: ``sqlite`` (the default, a file in the data directory) and
``postgresql`` (a database of its own in one PostgreSQL cluster started for the
session, see postgres.py), with the files in the data directory, or, with ``+s3``, in
a bucket of their own on one S3-compatible server started for the session (see
s3server.py). The same HTTP test then checks the same behaviour on each.

Every test runs on both databases; the tests of modules marked ``content_stores``
(those about files: uploads, downloads, ranges, backups, restarts) run with the bucket
too: on both databases with the session's vault (``vault_server``), and on PostgreSQL,
the team's configuration, with a vault of their own (``fresh_vault``, whose first start
uploads the demo vault's files). The other modules run with the directory only. That
keeps the suite's time in bounds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultfs.testing.postgres import PostgresCluster
from vaultfs.testing.s3_server import S3Server
from vaultfs.testing.vault_process import VaultProcess

BACKENDS = ["sqlite", "postgresql"]
#: The kinds with the files in a bucket.
S3_BACKENDS = ["sqlite+s3", "postgresql+s3"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "content_stores: the module's tests run with the files in a bucket too"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    files = metafunc.definition.get_closest_marker("content_stores") is not None
    if "vault_server" in metafunc.fixturenames:
        kinds = BACKENDS + S3_BACKENDS if files else BACKENDS
        metafunc.parametrize("vault_server", kinds, indirect=True, scope="module")
    if "fresh_vault" in metafunc.fixturenames:
        kinds = [*BACKENDS, "postgresql+s3"] if files else BACKENDS
        metafunc.parametrize("fresh_vault", kinds, indirect=True, scope="function")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """One PostgreSQL cluster for the session, stopped and removed at its end."""
    cluster = PostgresCluster()
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One S3-compatible server for the session (each vault gets a bucket of its own)."""
    server = S3Server(tmp_path_factory.mktemp("s3"))
    try:
        yield server.start()
    finally:
        server.stop()


def backend_server(request: pytest.FixtureRequest, data_dir: Path, backend: str) -> VaultProcess:
    """A (not yet started) vault server on ``backend``, with a new database (and, for
    ``+s3``, a new bucket) of its own."""
    database, _, content = backend.partition("+")
    args: list[str] = []
    env: dict[str, str] = {}
    if database == "postgresql":
        cluster: PostgresCluster = request.getfixturevalue("postgres")
        args += ["--database", cluster.create_database()]
        env.update(cluster.env)
    if content == "s3":
        s3: S3Server = request.getfixturevalue("s3")
        args += ["--content", f"s3://{s3.create_bucket()}/vault"]
        env.update(s3.env)
    return VaultProcess(data_dir, extra_args=args, env=env)


def _session_vault(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, kind: str
) -> Iterator[VaultProcess]:
    server = backend_server(request, tmp_path_factory.mktemp("vault") / "data", kind)
    with server:
        yield server


# The session's vault of each kind is a fixture of its own, not one fixture parametrised
# at session scope: pytest ends a parametrised fixture's value whenever a test asks for
# another parameter, so the sqlite vault was stopped for a postgresql test and started
# again (a new vault, 2-3 s of CPU) for the next sqlite one, file after file. Each of
# these is started once per process, when first asked for, and ends with the session
# (before the PostgreSQL cluster and the S3 server it needs, which it depends on).
@pytest.fixture(scope="session")
def _vault_sqlite(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VaultProcess]:
    yield from _session_vault(request, tmp_path_factory, "sqlite")


@pytest.fixture(scope="session")
def _vault_postgresql(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, postgres: object
) -> Iterator[VaultProcess]:
    yield from _session_vault(request, tmp_path_factory, "postgresql")


@pytest.fixture(scope="session")
def _vault_sqlite_s3(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, s3: object
) -> Iterator[VaultProcess]:
    yield from _session_vault(request, tmp_path_factory, "sqlite+s3")


@pytest.fixture(scope="session")
def _vault_postgresql_s3(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    postgres: object,
    s3: object,
) -> Iterator[VaultProcess]:
    yield from _session_vault(request, tmp_path_factory, "postgresql+s3")


@pytest.fixture(scope="module")
def vault_server(request: pytest.FixtureRequest) -> VaultProcess:
    """One demo vault per backend for the whole run; tests must not depend on others'."""
    server: VaultProcess = request.getfixturevalue("_vault_" + request.param.replace("+", "_"))
    return server


@pytest.fixture
def fresh_vault(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VaultProcess]:
    """A demo vault of this test's own (per backend), which the test may stop and start."""
    server = backend_server(request, tmp_path / "data", request.param)
    try:
        yield server.start()
    finally:
        server.stop()
