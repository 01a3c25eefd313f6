"""Configuration of one local vault server process (``ServerConfig``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ServerConfig", "default_data_dir"]


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

    @property
    def session_timeout_seconds(self) -> float:
        return self.session_timeout_minutes * 60.0
