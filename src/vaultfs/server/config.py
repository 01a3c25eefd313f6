"""Configuration of one local vault server process (``ServerConfig``), where its
database is (``database_settings``) and where its files are (``content_setting``)."""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "CONTENT_ENV",
    "DATABASE_ENV",
    "PASSWORD_FILE_ENV",
    "DatabaseSettings",
    "ServerConfig",
    "content_setting",
    "database_settings",
    "default_data_dir",
]


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/vaultfs/server``, or ``~/.local/share/vaultfs/server``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "vaultfs" / "server"


@dataclass(frozen=True)
class ServerConfig:
    """Everything ``create_app`` needs; built by ``vaultfs serve`` or by tests."""

    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 8817
    #: inactivity timeout of a session, in minutes (fractions allowed, for tests)
    session_timeout_minutes: float = 20.0
    #: API calls allowed per vault in each burst window
    burst_limit: int = 2000
    burst_window_seconds: int = 300
    #: API calls allowed per vault in each day
    daily_limit: int = 100_000
    #: password logins allowed per user name and vault DNS in each auth window
    auth_burst_limit: int = 300
    auth_window_seconds: int = 60
    #: once half the auth limit is used, logins are answered this much later
    auth_delay_ms: int = 500
    #: consecutive failed logins that lock an account (0 = never)
    lockout_attempts: int = 5
    #: certificate and key (PEM files) to serve HTTPS; None = plain HTTP
    tls_cert: Path | None = None
    tls_key: Path | None = None
    #: every vault accepts migration-mode imports (bulk versions and renditions), as
    #: if its ``migration_mode`` setting were on
    migration_mode: bool = False
    #: password of the demo users; None = generate one on first start
    demo_password: str | None = None
    log_level: str = "info"
    #: the database: None = the SQLite file ``vault.sqlite3`` in ``data_dir``; else a
    #: URL (``postgresql://USER@HOST[:PORT]/DB``) that several processes may share
    database_url: str | None = None
    #: a file holding the database password (else libpq's PGPASSWORD / PGPASSFILE)
    database_password_file: Path | None = None
    #: where the files are: None = the directory ``blobs`` in ``data_dir``; else
    #: ``s3://BUCKET/PREFIX`` (several processes may share it) or a directory
    content: str | None = None

    @property
    def session_timeout_seconds(self) -> float:
        return self.session_timeout_minutes * 60.0


#: Environment variables naming the database and its password file.
DATABASE_ENV = "VAULTFS_DATABASE"
PASSWORD_FILE_ENV = "VAULTFS_DATABASE_PASSWORD_FILE"
#: Environment variable naming the content store.
CONTENT_ENV = "VAULTFS_CONTENT"


@dataclass(frozen=True)
class DatabaseSettings:
    url: str | None
    password_file: Path | None


def database_settings(
    data_dir: Path,
    url: str | None,
    password_file: Path | None,
    environ: Mapping[str, str] = os.environ,
) -> DatabaseSettings:
    """Where the database is: the command line, else ``$VAULTFS_DATABASE``, else the
    ``[database]`` table of ``DATA/server.toml``, else SQLite in the data directory.

    A URL on the command line must not hold a password (argv is visible to every
    user); ValueError says so. A password file must be private (mode 0600).
    """
    if url is not None and urlsplit(url).password is not None:
        raise ValueError(
            "no password in --database (argv is public): use PGPASSFILE, PGPASSWORD"
            " or --database-password-file"
        )
    from_file = _server_toml(data_dir).get("database", {})
    url = url or environ.get(DATABASE_ENV) or from_file.get("url") or None
    found = password_file or environ.get(PASSWORD_FILE_ENV) or from_file.get("password_file")
    password_path = Path(found).expanduser() if found else None
    if password_path is not None and stat.S_IMODE(password_path.stat().st_mode) & 0o077:
        raise ValueError(f"{password_path} must be readable by its owner only (chmod 600)")
    return DatabaseSettings(url=url, password_file=password_path)


def content_setting(
    data_dir: Path, content: str | None, environ: Mapping[str, str] = os.environ
) -> str | None:
    """Where the files are: the command line (``--content``), else ``$VAULTFS_CONTENT``,
    else ``url`` in the ``[content]`` table of ``DATA/server.toml``, else None (the
    directory ``DATA/blobs``). ValueError for an ``s3://`` URL that is not
    ``s3://BUCKET/PREFIX`` (credentials never go in it: argv is public)."""
    from_file = _server_toml(data_dir).get("content", {})
    found = content or environ.get(CONTENT_ENV) or from_file.get("url")
    if not found:
        return None
    if found.startswith("s3://"):
        from .storage.s3 import S3Location

        return str(S3Location.parse(found))
    if "://" in found:
        raise ValueError("the content store is s3://BUCKET/PREFIX or a directory")
    return str(Path(found).expanduser().resolve())


def _server_toml(data_dir: Path) -> dict[str, dict[str, str]]:
    path = data_dir / "server.toml"
    if not path.exists():
        return {}
    with path.open("rb") as f:
        loaded: dict[str, dict[str, str]] = tomllib.load(f)
    return loaded
