"""What ``vaultfs serve`` and ``vaultfs serve-admin`` share on their command lines: the
data directory, the database and the content store, as arguments, and reading the
database settings and opening the content store they name (saying what is wrong on
stderr otherwise, a missing ``vaultfs[s3]`` too)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vaultfs import extras

from .config import (
    CONTENT_ENV,
    DATABASE_ENV,
    PASSWORD_FILE_ENV,
    DatabaseSettings,
    content_setting,
    database_settings,
    default_data_dir,
)
from .storage.content import ContentStore, ContentUnavailable
from .storage.stores import content_store

__all__ = [
    "content_argument",
    "data_argument",
    "database_arguments",
    "installed_store",
    "opened_content",
    "settings_of",
]


def data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"data directory (default: {default_data_dir()})",
    )


def database_arguments(parser: argparse.ArgumentParser) -> None:
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


def content_argument(parser: argparse.ArgumentParser, what: str = "where the files are") -> None:
    parser.add_argument(
        "--content",
        default=None,
        metavar="STORE",
        help=f"{what}: s3://BUCKET/PREFIX (endpoint, region and credentials from AWS_*"
        " variables or the AWS config files) or a directory (default:"
        f" ${CONTENT_ENV}, DATA/server.toml, else DATA/blobs)",
    )


def opened_content(
    args: argparse.Namespace, command: str, setting: str | None = None
) -> ContentStore | None:
    """The (opened) content store of a command line (``setting``, by default its
    ``--content``), or None after saying why not."""
    data_dir = (args.data or default_data_dir()).resolve()
    try:
        given = args.content if setting is None else setting
        store = installed_store(content_setting(data_dir, given), data_dir)
        store.open()
    except (ValueError, OSError, ContentUnavailable) as exc:
        print(f"vaultfs {command}: {exc}", file=sys.stderr)
        return None
    return store


def installed_store(content: str | None, data_dir: Path) -> ContentStore:
    """The store ``content`` names (``storage.stores.content_store``), once the extra it
    needs is installed: a bucket needs ``vaultfs[s3]`` (ContentUnavailable says so)."""
    if content is not None and content.startswith("s3://"):
        gone = extras.missing("s3")
        if gone:
            raise ContentUnavailable(extras.advice("s3", gone))
    return content_store(content, data_dir)


def settings_of(args: argparse.Namespace, command: str) -> DatabaseSettings | None:
    """The database settings of a command line, or None after saying what is wrong."""
    try:
        return database_settings(
            (args.data or default_data_dir()).resolve(), args.database, args.database_password_file
        )
    except (ValueError, OSError) as exc:
        print(f"vaultfs {command}: {exc}", file=sys.stderr)
        return None
