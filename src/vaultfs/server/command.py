"""``vaultfs serve``: run the local vault on Hypercorn's trio worker."""

from __future__ import annotations

import argparse
import logging
import os
import signal
from pathlib import Path

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve

from .app import create_app
from .config import ServerConfig, default_data_dir

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this half's sub-commands to the ``vaultfs`` parser."""
    parser = sub.add_parser("serve", help="serve a local vault (the vault REST API)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8817, help="port to listen on")
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"data directory (default: {default_data_dir()})",
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
        "--daily-limit",
        type=int,
        default=100_000,
        metavar="N",
        help="API calls per vault per day (default: 100000)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    parser.set_defaults(handler=run)


async def _until_signal() -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            return


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = ServerConfig(
        data_dir=(args.data or default_data_dir()).resolve(),
        host=args.host,
        port=args.port,
        session_timeout_minutes=args.session_timeout,
        burst_limit=args.burst_limit,
        daily_limit=args.daily_limit,
        # From the environment, never from argv (argv is visible to every user).
        demo_password=os.environ.get("VAULTFS_DEMO_PASSWORD") or None,
        log_level=args.log_level,
    )
    hypercorn = HypercornConfig()
    hypercorn.bind = [f"{config.host}:{config.port}"]
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
    await serve(create_app(config), hypercorn, shutdown_trigger=_until_signal)  # type: ignore[arg-type]
