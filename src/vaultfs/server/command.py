"""``vaultfs serve``: run the local vault on Hypercorn's trio worker (HTTP or HTTPS).
``vaultfs serve-admin`` is ``admin_command``'s; the arguments both take are
``command_options``'."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from vaultfs import extras

from . import admin_command
from .command_options import (
    content_argument,
    data_argument,
    database_arguments,
    installed_store,
    settings_of,
)
from .config import ServerConfig, content_setting, default_data_dir
from .storage.content import ContentUnavailable

if TYPE_CHECKING:
    from hypercorn.config import Config as HypercornConfig

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this half's sub-commands to the ``vaultfs`` parser."""
    parser = sub.add_parser("serve", help="serve a local vault (the vault REST API)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8817, help="port to listen on")
    data_argument(parser)
    database_arguments(parser)
    content_argument(parser)
    parser.add_argument(
        "--tls-cert", type=Path, default=None, metavar="FILE", help="serve HTTPS: certificate (PEM)"
    )
    parser.add_argument(
        "--tls-key", type=Path, default=None, metavar="FILE", help="serve HTTPS: private key (PEM)"
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=20.0,
        metavar="MINUTES",
        help="session inactivity timeout in minutes (default: 20)",
    )
    parser.add_argument(
        "--burst-limit",
        type=int,
        default=2000,
        metavar="N",
        help="API calls per vault per 5 minutes (default: 2000)",
    )
    parser.add_argument(
        "--burst-window",
        type=int,
        default=ServerConfig.burst_window_seconds,
        metavar="SECONDS",
        help="length of the burst window (default: %(default)s)",
    )
    parser.add_argument(
        "--daily-limit",
        type=int,
        default=100_000,
        metavar="N",
        help="API calls per vault per day (default: 100000)",
    )
    parser.add_argument(
        "--auth-burst-limit",
        type=int,
        default=ServerConfig.auth_burst_limit,
        metavar="N",
        help="password logins per user name and vault DNS per minute (default: %(default)s)",
    )
    parser.add_argument(
        "--auth-delay-ms",
        type=int,
        default=ServerConfig.auth_delay_ms,
        metavar="MS",
        help="delay of logins once half the auth limit is used (default: %(default)s)",
    )
    parser.add_argument(
        "--lockout-attempts",
        type=int,
        default=ServerConfig.lockout_attempts,
        metavar="N",
        help="consecutive failed logins that lock an account; 0 = never (default: %(default)s)",
    )
    parser.add_argument(
        "--migration-mode",
        action="store_true",
        help="accept migration-mode imports (bulk versions and renditions) in every vault",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    parser.set_defaults(handler=run)
    admin_command.register(sub)


async def _until_signal() -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            return


def run(args: argparse.Namespace) -> int:
    # `pip install vaultfs` is the mount alone: the local vault is an extra.
    if not extras.require("server", "vaultfs serve"):
        return 2
    if (args.tls_cert is None) != (args.tls_key is None):
        print("vaultfs serve: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    settings = settings_of(args, "serve")
    if settings is None:
        return 2
    data_dir = (args.data or default_data_dir()).resolve()
    try:
        content = content_setting(data_dir, args.content)
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        # A store that cannot be reached is said in one line, before serving starts.
        installed_store(content, data_dir).open()
    except (ValueError, OSError, ContentUnavailable) as exc:
        print(f"vaultfs serve: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = ServerConfig(
        data_dir=(args.data or default_data_dir()).resolve(),
        host=args.host,
        port=args.port,
        session_timeout_minutes=args.session_timeout,
        burst_limit=args.burst_limit,
        burst_window_seconds=args.burst_window,
        daily_limit=args.daily_limit,
        migration_mode=args.migration_mode,
        auth_burst_limit=args.auth_burst_limit,
        auth_delay_ms=args.auth_delay_ms,
        lockout_attempts=args.lockout_attempts,
        tls_cert=args.tls_cert.resolve() if args.tls_cert else None,
        tls_key=args.tls_key.resolve() if args.tls_key else None,
        # From the environment, never from argv (argv is visible to every user).
        demo_password=os.environ.get("VAULTFS_DEMO_PASSWORD") or None,
        log_level=args.log_level,
        database_url=settings.url,
        database_password_file=settings.password_file,
        content=content,
    )
    # Hypercorn and the application (Starlette, SQLAlchemy, Alembic) are imported only
    # when a server starts: every other command, a mount above all, runs without them
    # (about 30 MiB of a mount daemon's memory).
    from hypercorn.config import Config as HypercornConfig

    hypercorn = HypercornConfig()
    hypercorn.bind = [f"{config.host}:{config.port}"]
    if config.tls_cert and config.tls_key:
        # Hypercorn serves TLS on the bind; URLs in answers then say https.
        hypercorn.certfile = str(config.tls_cert)
        hypercorn.keyfile = str(config.tls_key)
    hypercorn.loglevel = args.log_level.upper()
    hypercorn.accesslog = None
    # Hypercorn logs through our root logger (one format, no duplicate lines).
    hypercorn.errorlog = logging.getLogger("hypercorn.error")
    # Large uploads and downloads take long; the defaults would cut them off.
    hypercorn.keep_alive_timeout = 75
    # On SIGTERM, requests in flight get this long to finish; idle keep-alive
    # connections hold the shutdown up to it as well, so keep it short.
    hypercorn.graceful_timeout = 2
    trio.run(_serve, config, hypercorn)
    return 0


async def _serve(config: ServerConfig, hypercorn: HypercornConfig) -> None:
    from hypercorn.trio import serve

    from .app import create_app

    await serve(create_app(config), hypercorn, shutdown_trigger=_until_signal)  # type: ignore[arg-type]
