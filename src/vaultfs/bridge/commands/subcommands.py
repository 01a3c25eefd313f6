"""Sub-commands of the bridge half: ``mount``, ``umount``, ``status``, ``flush``,
``demo``, ``set-password``, ``login``, ``logout``, ``install-helper``, ``webdav``, and
``actions``, ``do``, ``event`` (``lifecycle``), ``pin``, ``unpin`` (``pin``).

Owns the bridge's part of the command line: it registers each sub-command, the ones
in a module of their own (``mount_command``; ``webdav_command``; ``sign_in_commands``:
set-password, login, logout; ``manage``, ``sync``, ``lifecycle``, ``search``, ``pin``) and the
two small ones here, ``demo`` and ``install-helper``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vaultfs import extras
from vaultfs.bridge.commands import (
    install_helper,
    lifecycle,
    manage,
    mount_command,
    pin,
    search,
    sign_in_commands,
    sync,
    webdav_command,
)
from vaultfs.bridge.commands.log_options import log_level, logging_arguments
from vaultfs.bridge.daemon.logs import setup_logging

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this half's sub-commands to the ``vaultfs`` parser."""
    mount_command.register(sub)
    manage.register(sub)
    sync.register(sub)
    lifecycle.register(sub)
    pin.register(sub)
    search.register(sub)
    webdav_command.register(sub)

    demo = sub.add_parser("demo", help="start a local demo vault and mount it")
    demo.add_argument("mountpoint", nargs="?", type=Path, default=Path.home() / "vaultfs-demo")
    logging_arguments(demo)
    demo.set_defaults(handler=_demo)

    sign_in_commands.register(sub)

    helper = sub.add_parser(
        "install-helper",
        help="link mount.fuse.vaultfs into /sbin so that mount -t fuse.vaultfs and fstab work",
    )
    helper.add_argument("--dir", type=Path, default=install_helper.HELPER_DIR, help="default /sbin")
    helper.add_argument("--remove", action="store_true", help="remove the link instead")
    helper.set_defaults(handler=_install_helper)


def _demo(args: argparse.Namespace) -> int:
    # The demo serves a local vault (``vaultfs serve``, a child process): say at once
    # when that half is not installed, not after the child failed.
    if not extras.require("server", "vaultfs demo"):
        return 2
    from vaultfs.bridge.commands.demo import run_demo  # mounts: loads pyfuse3

    setup_logging(log_level(args), args.log_file)
    return run_demo(args.mountpoint)


def _install_helper(args: argparse.Namespace) -> int:
    try:
        message = install_helper.install(args.dir, remove=args.remove)
    except OSError as exc:
        print(f"vaultfs install-helper: {exc}", file=sys.stderr)
        return 1
    print(message)
    return 0
