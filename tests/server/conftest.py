"""Server tests run on both backends: the vault fixtures are parametrised by database.

``vault_server`` and ``fresh_vault`` (see tests/conftest.py) come here in two kinds:
``sqlite`` (the default, a file in the data directory) and ``postgresql`` (a database
of its own in one PostgreSQL cluster started for the session, see postgres.py). The
same HTTP test then checks the same behaviour on each.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.postgres import PostgresCluster
from tests.vaultproc import VaultProcess

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """One PostgreSQL cluster for the session, stopped and removed at its end."""
    cluster = PostgresCluster()
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def backend_server(request: pytest.FixtureRequest, data_dir: Path, backend: str) -> VaultProcess:
    """A (not yet started) vault server on ``backend``, with a new database of its own."""
    if backend == "postgresql":
        cluster: PostgresCluster = request.getfixturevalue("postgres")
        return VaultProcess(
            data_dir, extra_args=["--database", cluster.create_database()], env=cluster.env
        )
    return VaultProcess(data_dir)


@pytest.fixture(scope="session", params=BACKENDS)
def vault_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VaultProcess]:
    """One demo vault per backend for the whole run; tests must not depend on others'."""
    server = backend_server(request, tmp_path_factory.mktemp("vault") / "data", request.param)
    with server:
        yield server


@pytest.fixture(params=BACKENDS)
def fresh_vault(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VaultProcess]:
    """A demo vault of this test's own (per backend), which the test may stop and start."""
    server = backend_server(request, tmp_path / "data", request.param)
    try:
        yield server.start()
    finally:
        server.stop()
