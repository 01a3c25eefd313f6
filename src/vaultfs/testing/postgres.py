"""A throwaway PostgreSQL cluster for tests and benchmarks (Debian's ``postgresql``).

``PostgresCluster`` runs ``initdb`` and ``pg_ctl`` from the installed server in a
temporary directory of its own, as an unprivileged user when the tests run as root (PostgreSQL
refuses to run as root), listening on 127.0.0.1 on a free port with password
(SCRAM) authentication. ``create_database`` gives each vault its own database; the
password reaches servers through ``PGPASSWORD`` (``env``), never argv. ``stop`` is
called from a ``finally`` by whoever started it.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from vaultfs.testing.vault_process import free_port

__all__ = ["PostgresCluster", "find_bindir"]

_SUPERUSER = "vaultfs"


def find_bindir() -> Path | None:
    """The bin directory of the newest installed PostgreSQL server, or None."""
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if candidates:
        return candidates[-1].parent
    found = shutil.which("pg_ctl")
    return Path(found).resolve().parent if found else None


def _run_as() -> tuple[dict[str, Any], Callable[[Path], None]]:
    """subprocess arguments that drop root, and how to hand a path to that user."""
    if os.geteuid() != 0:
        return {}, lambda _path: None
    for name in ("postgres", "nobody"):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue

        def give(path: Path, uid: int = user.pw_uid, gid: int = user.pw_gid) -> None:
            os.chown(path, uid, gid)

        return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}, give
    raise RuntimeError("no unprivileged user to run PostgreSQL as")


class PostgresCluster:
    def __init__(self) -> None:
        bindir = find_bindir()
        if bindir is None:
            raise RuntimeError("PostgreSQL is not installed (Debian package: postgresql)")
        self.bindir = bindir
        # Its own directory under /tmp: pytest's temporary directories are private
        # to root, out of reach of the user the server runs as.
        self.base = Path(tempfile.mkdtemp(prefix="vaultfs-pg-"))
        self.datadir = self.base / "pgdata"
        self.port = free_port()
        self.password = secrets.token_urlsafe(16)
        self._as_user, self._give = _run_as()
        self._counter = 0
        self.running = False

    @property
    def env(self) -> dict[str, str]:
        """Environment entries a client (a vault server) needs to log in."""
        return {"PGPASSWORD": self.password}

    def url(self, database: str) -> str:
        """The database URL, without the password (that travels in ``env``)."""
        return f"postgresql://{_SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _pg(self, program: str, *args: str) -> None:
        subprocess.run(
            [str(self.bindir / program), *args],
            check=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd="/",
            **self._as_user,
        )

    def start(self) -> PostgresCluster:
        self._give(self.base)
        pwfile = self.base / "pwfile"
        pwfile.write_text(self.password + "\n")
        pwfile.chmod(0o600)
        self._give(pwfile)
        self._pg(
            "initdb", "-D", str(self.datadir), "-U", _SUPERUSER, "--auth=scram-sha-256",
            f"--pwfile={pwfile}", "--encoding=UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        pwfile.unlink()
        # Test settings: nothing here must survive a crash, so no fsync.
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.base}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            " -c max_connections=300"
        )
        self._pg(
            "pg_ctl", "-D", str(self.datadir), "-o", options,
            "-l", str(self.base / "postgres.log"), "-w", "-t", "60", "start",
        )  # fmt: skip
        self.running = True
        return self

    def stop(self) -> None:
        try:
            if self.running:
                self.running = False
                self._pg("pg_ctl", "-D", str(self.datadir), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def admin(self) -> psycopg.Connection[Any]:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=_SUPERUSER,
            password=self.password,
            dbname="postgres",
            autocommit=True,
        )

    def create_database(self, prefix: str = "vault") -> str:
        """A new empty database; returns its URL."""
        self._counter += 1
        name = f"{prefix}_{self._counter}"
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
