"""``vaultfs webdav``: the vault's tree served over WebDAV, for Windows and macOS.

Owns the command's arguments: which vault (a profile or a URL), who signs in, and
where it listens. On loopback (the default) it serves the one user it signs in as (a
password from ``--password-file``, the environment or the keyring: never argv). Any
other address is served over TLS only (``--tls-cert``, ``--tls-key``; refused without
them, exit 2), and then each WebDAV user signs in with their own vault credentials.
The front itself is ``bridge.webdav``, imported only when it starts.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path

import trio

from vaultfs import errors, extras
from vaultfs.bridge.commands.credentials import CredentialError, find_password
from vaultfs.bridge.commands.log_options import log_level, logging_arguments
from vaultfs.bridge.commands.mount_request import DEFAULT_URL
from vaultfs.bridge.daemon.config import default_cache_dir
from vaultfs.bridge.daemon.logs import setup_logging
from vaultfs.bridge.tree.walks import WALK_BURST, WALK_CALLS
from vaultfs.bridge.webdav.config import WebdavConfig
from vaultfs.profiles import ProfileError, load_profile, names_profile
from vaultfs.wire import MAX_FILE_SIZE

__all__ = ["parse_listen", "register"]

#: where the front listens unless told otherwise
DEFAULT_LISTEN = "127.0.0.1:8818"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``webdav`` to the ``vaultfs`` parser."""
    webdav = sub.add_parser(
        "webdav",
        help="serve the vault's tree over WebDAV (a network drive for Windows and macOS)",
        usage="vaultfs webdav [PROFILE | URL] [--user NAME] [--listen ADDR:PORT] [options]",
    )
    webdav.add_argument("target", nargs="?", metavar="PROFILE|URL", help=f"default {DEFAULT_URL}")
    webdav.add_argument("--user", help="user name to sign in as")
    webdav.add_argument(
        "--password-file", type=Path, help="read the password from this 0600 file (first line)"
    )
    webdav.add_argument(
        "--listen", default=DEFAULT_LISTEN, metavar="ADDR:PORT", help=f"default {DEFAULT_LISTEN}"
    )
    webdav.add_argument("--tls-cert", type=Path, help="serve HTTPS with this certificate (PEM)")
    webdav.add_argument("--tls-key", type=Path, help="... and this private key (PEM)")
    webdav.add_argument("--cache-dir", type=Path, help="content cache and spool of the front")
    webdav.add_argument("--read-only", action="store_true", help="refuse every change")
    webdav.add_argument(
        "--allow-delete", action="store_true", help="DELETE of a document deletes it in the vault"
    )
    webdav.add_argument(
        "--poll-interval", type=float, default=30.0, help="seconds between index polls"
    )
    webdav.add_argument(
        "--max-upload",
        type=int,
        default=MAX_FILE_SIZE >> 20,
        metavar="MIB",
        help=f"largest PUT body taken, in MiB (default {MAX_FILE_SIZE >> 20}: the vault's limit)",
    )
    webdav.add_argument(
        "--walk-calls",
        type=int,
        default=WALK_CALLS,
        metavar="N",
        help=f"calls a day the clients' folder crawls may spend (default {WALK_CALLS})",
    )
    webdav.add_argument(
        "--walk-burst",
        type=int,
        default=WALK_BURST,
        metavar="N",
        help=f"... and each client per 5 minutes (default {WALK_BURST})",
    )
    logging_arguments(webdav)
    webdav.set_defaults(handler=_webdav)


def parse_listen(value: str) -> tuple[str, int, bool]:
    """``ADDR:PORT`` (``[v6]:PORT`` for IPv6): the host, the port and whether the
    address is loopback."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--listen wants ADDR:PORT, not {value!r}")
    host = host.strip("[]") or "127.0.0.1"
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    return host, int(port), loopback


def _tls(args: argparse.Namespace, loopback: bool) -> tuple[Path | None, Path | None]:
    """The certificate and key of HTTPS; beyond loopback they are required."""
    cert, key = args.tls_cert, args.tls_key
    if (cert is None) != (key is None):
        raise ValueError("--tls-cert and --tls-key go together")
    if cert is None and not loopback:
        raise ValueError(
            f"--listen {args.listen}: an address beyond loopback is served over TLS only, "
            "where each WebDAV user signs in with their own vault credentials: give "
            "--tls-cert FILE and --tls-key FILE"
        )
    for path in (cert, key):
        if path is not None and not os.access(path, os.R_OK):
            raise ValueError(f"cannot read {path}")
    return cert, key


def _webdav(args: argparse.Namespace) -> int:
    if not extras.require("webdav", "vaultfs webdav"):
        return 2
    setup_logging(log_level(args), args.log_file)
    try:
        host, port, loopback = parse_listen(args.listen)
        tls_cert, tls_key = _tls(args, loopback)
        if args.max_upload < 1:
            raise ValueError(f"--max-upload wants a number of MiB above 0, not {args.max_upload}")
        if min(args.walk_calls, args.walk_burst) < 0:
            raise ValueError("--walk-calls and --walk-burst want a number of calls, 0 or more")
        password_file = args.password_file
        if args.target and names_profile(args.target):
            profile = load_profile(args.target)
            url, user = profile.url, args.user or profile.user
            password_file = password_file or profile.password_file
        else:
            url, user = args.target or DEFAULT_URL, args.user
        password = ""
        if loopback:  # its one user signs in now; beyond loopback each user does
            if not user:
                raise ValueError("no user name: give --user NAME (or a profile)")
            password = find_password(url, user, password_file)
    except (ValueError, ProfileError, CredentialError) as exc:
        print(f"vaultfs webdav: {exc}", file=sys.stderr)
        return 2
    from vaultfs.bridge.webdav.serve import run_webdav  # loads WsgiDAV

    cache_owner = user if loopback else "*"  # the users' front has no one user
    config = WebdavConfig(
        url=url,
        user=user if loopback else "",
        password=password,
        host=host,
        port=port,
        cache_dir=args.cache_dir or default_cache_dir(url, cache_owner).with_suffix(".webdav"),
        poll_interval=args.poll_interval,
        read_only=args.read_only,
        allow_delete=args.allow_delete,
        max_upload=args.max_upload << 20,
        tls_cert=tls_cert,
        tls_key=tls_key,
        users=not loopback,
        walk_calls=args.walk_calls,
        walk_burst=args.walk_burst,
    )
    try:
        trio.run(run_webdav, config, _ready)
    except errors.VaultError as exc:
        print(f"vaultfs webdav: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"vaultfs webdav: {exc}", file=sys.stderr)
        return 1
    return 0


def _ready(address: str) -> None:
    print(f"vaultfs webdav: serving at {address}", flush=True)
