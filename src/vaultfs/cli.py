"""The ``vaultfs`` command: parses the sub-command and hands over.

Each half registers its own sub-commands (``register(subparsers)``), so this module
knows their names only.
"""

from __future__ import annotations

import argparse
import os
import sys

from vaultfs import __version__
from vaultfs.bridge.commands import mount_helper as bridge_mount_helper
from vaultfs.bridge.commands import subcommands as bridge_command
from vaultfs.server import command as server_command

__all__ = ["main", "mount_helper"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vaultfs", description="Mount a document vault as a drive, or serve a local vault."
    )
    parser.add_argument("--version", action="version", version=f"vaultfs {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    server_command.register(sub)
    bridge_command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Every file vaultfs keeps (vault records and blobs, SQLite's side files, caches,
    # spool, logs) is its owner's alone, whatever the library creating it asks for.
    # Files users create through a mount are not affected: the kernel applies the
    # creating process's umask, not the daemon's.
    os.umask(0o077)
    args = build_parser().parse_args(argv)
    result: int = args.handler(args)
    return result


def mount_helper() -> int:
    """The ``mount.fuse.vaultfs`` console script: mount(8)'s argv run as ``vaultfs mount``
    (here, above both the helper and the command, so the helper needs no import of this
    module)."""
    return bridge_mount_helper.run(sys.argv[1:], main)


if __name__ == "__main__":
    sys.exit(main())
