"""``vaultfs serve-admin``: administration of a vault's data directory, also while
servers run on it: unlock a user locked out by failed logins, back up, restore into an
empty database, and move the files to another content store."""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from vaultfs import extras

from .command_options import (
    content_argument,
    data_argument,
    database_arguments,
    opened_content,
    settings_of,
)
from .config import ServerConfig, default_data_dir

if TYPE_CHECKING:
    from .storage.db import Database
    from .storage.move import Moved

# The database, the demo data and the storage functions (SQLAlchemy, Alembic, the
# application) are imported by each action when it runs, not when the ``vaultfs``
# parser is built: every other command, a mount above all, runs without them.

__all__ = ["admin_database", "register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve-admin`` and its actions to the ``vaultfs`` parser."""
    admin = sub.add_parser("serve-admin", help="administer a local vault's data directory")
    actions = admin.add_subparsers(dest="action", required=True, metavar="ACTION")
    unlock = actions.add_parser("unlock", help="unlock a user locked out by failed logins")
    unlock.add_argument("username", help="user name of the account")
    data_argument(unlock)
    database_arguments(unlock)
    unlock.set_defaults(handler=_needs_server(run_unlock))
    backup = actions.add_parser(
        "backup", help="write a backup archive of the vault (while servers run)"
    )
    backup.add_argument("archive", type=Path, help="the archive to write (must not exist)")
    data_argument(backup)
    database_arguments(backup)
    content_argument(backup)
    backup.set_defaults(handler=_needs_server(run_backup))
    restore = actions.add_parser(
        "restore", help="restore a backup archive into a new, empty database and data directory"
    )
    restore.add_argument("archive", type=Path, help="an archive made by backup")
    data_argument(restore)
    database_arguments(restore)
    content_argument(restore)
    restore.set_defaults(handler=_needs_server(run_restore))
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
    data_argument(move)
    database_arguments(move)
    content_argument(move, "the store to copy from")
    move.set_defaults(handler=_needs_server(run_move_content))


def _needs_server(
    action: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """``action``, run once the local vault's extra is installed (exit 2 without it)."""

    @functools.wraps(action)
    def checked(args: argparse.Namespace) -> int:
        if not extras.require("server", "vaultfs serve-admin"):
            return 2
        return action(args)

    return checked


def admin_database(args: argparse.Namespace) -> Database | None:
    """The open database of a ``serve-admin`` command, or None after saying why not."""
    settings = settings_of(args, "serve-admin")
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
    from .app import open_database

    db = open_database(config)
    db.open()
    return db


def run_unlock(args: argparse.Namespace) -> int:
    """Unlock an account; works while the server runs (the database allows a second
    writer)."""
    from .storage import users

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
    from . import demo
    from .storage import backup

    db = admin_database(args)
    if db is None:
        return 1
    try:
        blobs = opened_content(args, "serve-admin backup")
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
    from .app import open_database
    from .storage import backup

    settings = settings_of(args, "serve-admin")
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
    blobs = opened_content(args, "serve-admin restore")
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
    from . import demo
    from .storage.move import move_content

    source = opened_content(args, "serve-admin move-content")
    if source is None:
        return 1
    target = opened_content(args, "serve-admin move-content", args.target)
    if target is None:
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
