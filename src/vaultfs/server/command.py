"""``vaultfs serve``: run the local vault on Hypercorn's trio worker (HTTP or HTTPS);
``vaultfs serve-admin``: administration of a vault (unlock a user, backup, restore,
move the files to another content store)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve

from . import demo
from .app import create_app, open_database
from .config import (
    CONTENT_ENV,
    DATABASE_ENV,
    PASSWORD_FILE_ENV,
    DatabaseSettings,
    ServerConfig,
    content_setting,
    database_settings,
    default_data_dir,
)
from .storage import backup, users
from .storage.content import ContentStore, ContentUnavailable
from .storage.db import Database
from .storage.move import Moved, move_content
from .storage.stores import content_store

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this half's sub-commands to the ``vaultfs`` parser."""
    parser = sub.add_parser("serve", help="serve a local vault (the vault REST API)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8817, help="port to listen on")
    _data_argument(parser)
    _database_arguments(parser)
    _content_argument(parser)
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

    admin = sub.add_parser("serve-admin", help="administer a local vault's data directory")
    actions = admin.add_subparsers(dest="action", required=True, metavar="ACTION")
    unlock = actions.add_parser("unlock", help="unlock a user locked out by failed logins")
    unlock.add_argument("username", help="user name of the account")
    _data_argument(unlock)
    _database_arguments(unlock)
    unlock.set_defaults(handler=run_unlock)
    backup = actions.add_parser(
        "backup", help="write a backup archive of the vault (while servers run)"
    )
    backup.add_argument("archive", type=Path, help="the archive to write (must not exist)")
    _data_argument(backup)
    _database_arguments(backup)
    _content_argument(backup)
    backup.set_defaults(handler=run_backup)
    restore = actions.add_parser(
        "restore", help="restore a backup archive into a new, empty database and data directory"
    )
    restore.add_argument("archive", type=Path, help="an archive made by backup")
    _data_argument(restore)
    _database_arguments(restore)
    _content_argument(restore)
    restore.set_defaults(handler=run_restore)
    move = actions.add_parser(
        "move-content",
        help="copy every file of the vault to another content store (resumable, verified)",
    )
    move.add_argument(
        "target", metavar="TARGET", help="s3://BUCKET/PREFIX, or a directory (e.g. DATA/blobs)"
    )
    move.add_argument(
        "--verify", action="store_true", help="read every copied file back and check its sha256"
    )
    _data_argument(move)
    _database_arguments(move)
    _content_argument(move, "the store to copy from")
    move.set_defaults(handler=run_move_content)


def _data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"data directory (default: {default_data_dir()})",
    )


def _database_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="postgresql://USER@HOST[:PORT]/DB shared by several processes; no password"
        " here: PGPASSFILE, PGPASSWORD or --database-password-file (default:"
        f" ${DATABASE_ENV}, DATA/server.toml, else SQLite in the data directory)",
    )
    parser.add_argument(
        "--database-password-file",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"file (mode 0600) holding the database password (or ${PASSWORD_FILE_ENV})",
    )


def _content_argument(parser: argparse.ArgumentParser, what: str = "where the files are") -> None:
    parser.add_argument(
        "--content",
        default=None,
        metavar="STORE",
        help=f"{what}: s3://BUCKET/PREFIX (endpoint, region and credentials from AWS_*"
        " variables or the AWS config files) or a directory (default:"
        f" ${CONTENT_ENV}, DATA/server.toml, else DATA/blobs)",
    )


def _content(args: argparse.Namespace, command: str) -> ContentStore | None:
    """The (opened) content store of a command line, or None after saying why not."""
    data_dir = (args.data or default_data_dir()).resolve()
    try:
        store = content_store(content_setting(data_dir, args.content), data_dir)
        store.open()
    except (ValueError, OSError, ContentUnavailable) as exc:
        print(f"vaultfs {command}: {exc}", file=sys.stderr)
        return None
    return store


def _settings(args: argparse.Namespace, command: str) -> DatabaseSettings | None:
    """The database settings of a command line, or None after saying what is wrong."""
    try:
        return database_settings(
            (args.data or default_data_dir()).resolve(), args.database, args.database_password_file
        )
    except (ValueError, OSError) as exc:
        print(f"vaultfs {command}: {exc}", file=sys.stderr)
        return None


def admin_database(args: argparse.Namespace) -> Database | None:
    """The open database of a ``serve-admin`` command, or None after saying why not."""
    settings = _settings(args, "serve-admin")
    if settings is None:
        return None
    data_dir = (args.data or default_data_dir()).resolve()
    config = ServerConfig(
        data_dir=data_dir,
        database_url=settings.url,
        database_password_file=settings.password_file,
    )
    if settings.url is None and not (data_dir / "vault.sqlite3").exists():
        print(f"vaultfs serve-admin: no vault data in {data_dir}", file=sys.stderr)
        return None
    db = open_database(config)
    db.open()
    return db


def run_unlock(args: argparse.Namespace) -> int:
    """Unlock an account; works while the server runs (the database allows a second
    writer)."""
    db = admin_database(args)
    if db is None:
        return 1
    try:
        found = db.write_sync(users.unlock_user, args.username)
    finally:
        db.close()
    if not found:
        print(f"vaultfs serve-admin: no user [{args.username}]", file=sys.stderr)
        return 1
    print(f"unlocked {args.username}")
    return 0


def run_backup(args: argparse.Namespace) -> int:
    """Back up records and blobs in one consistent snapshot; servers keep running."""
    db = admin_database(args)
    if db is None:
        return 1
    try:
        blobs = _content(args, "serve-admin backup")
        if blobs is None:
            return 1
        manifest = backup.make_backup(db, blobs, demo.referenced_blobs, args.archive)
    except (backup.BackupError, OSError) as exc:
        print(f"vaultfs serve-admin backup: {exc}", file=sys.stderr)
        return 1
    finally:
        db.close()
    rows = sum(manifest["rows"].values())
    print(f"backed up {rows} records and {manifest['blobs']} files to {args.archive}")
    return 0


def run_restore(args: argparse.Namespace) -> int:
    """Restore an archive into an empty database (the data directory's SQLite file by
    default) and data directory; no server may run on them meanwhile."""
    settings = _settings(args, "serve-admin")
    if settings is None:
        return 1
    data_dir = (args.data or default_data_dir()).resolve()
    if settings.url is None and (data_dir / "vault.sqlite3").exists():
        print(f"vaultfs serve-admin restore: {data_dir} holds a vault already", file=sys.stderr)
        return 1
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    config = ServerConfig(
        data_dir=data_dir,
        database_url=settings.url,
        database_password_file=settings.password_file,
    )
    blobs = _content(args, "serve-admin restore")
    if blobs is None:
        return 1
    db = open_database(config)
    try:
        manifest = backup.restore_backup(db, blobs, args.archive)
    except (backup.BackupError, OSError, KeyError, ValueError) as exc:
        print(f"vaultfs serve-admin restore: {exc}", file=sys.stderr)
        return 1
    finally:
        db.close()
    rows = sum(manifest["rows"].values())
    print(f"restored {rows} records and {manifest['blobs']} files from {args.archive}")
    return 0


def run_move_content(args: argparse.Namespace) -> int:
    """Copy every file the records reference to the store TARGET; servers may keep
    running (run it again after they stopped: it copies only what is missing)."""
    source = _content(args, "serve-admin move-content")
    if source is None:
        return 1
    data_dir = (args.data or default_data_dir()).resolve()
    try:
        target = content_store(content_setting(data_dir, args.target), data_dir)
        target.open()
    except (ValueError, OSError, ContentUnavailable) as exc:
        print(f"vaultfs serve-admin move-content: {exc}", file=sys.stderr)
        return 1
    if str(target) == str(source):
        print(f"vaultfs serve-admin move-content: the files are in {target} already",
              file=sys.stderr)  # fmt: skip
        return 1
    db = admin_database(args)
    if db is None:
        return 1
    try:
        wanted = db.read_sync(demo.referenced_blobs)
    finally:
        db.close()

    def progress(moved: Moved) -> None:
        done = moved.copied + moved.present + len(moved.problems)
        if done % 100 == 0:
            print(f"{done} of {len(wanted)} files", flush=True)

    moved = move_content(source, target, wanted, verify=args.verify, progress=progress)
    for problem in moved.problems:
        print(f"vaultfs serve-admin move-content: {problem}", file=sys.stderr)
    mib = moved.copied_bytes / (1024 * 1024)
    checked = f", {moved.verified} read back and verified" if args.verify else ""
    print(
        f"copied {moved.copied} files ({mib:.1f} MiB) from {source} to {target};"
        f" {moved.present} were there already{checked}; {len(moved.problems)} problems"
    )
    return 1 if moved.problems else 0


async def _until_signal() -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            return


def run(args: argparse.Namespace) -> int:
    if (args.tls_cert is None) != (args.tls_key is None):
        print("vaultfs serve: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    settings = _settings(args, "serve")
    if settings is None:
        return 2
    data_dir = (args.data or default_data_dir()).resolve()
    try:
        content = content_setting(data_dir, args.content)
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        # A store that cannot be reached is said in one line, before serving starts.
        content_store(content, data_dir).open()
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
    await serve(create_app(config), hypercorn, shutdown_trigger=_until_signal)  # type: ignore[arg-type]
