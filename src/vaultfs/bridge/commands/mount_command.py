"""``vaultfs mount``: its arguments, signing in, and running the mount in the foreground
or daemonised.

How the user signs in is the vault's discovery first: a password, whose way into the
daemon is ``credentials`` and stdin, never argv; or single sign-on (``signin``), whose
tokens the daemon reads from their store itself. A daemonised mount is a forked child
in its own session that reports on a pipe once the mount answers, so the parent exits
0 only when the mount is up and with the child's error otherwise. What
is mounted is ``mount_request``'s.
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import trio

from vaultfs import errors
from vaultfs.bridge.commands import control
from vaultfs.bridge.commands.credentials import CredentialError, find_password
from vaultfs.bridge.commands.log_options import log_level, logging_arguments
from vaultfs.bridge.commands.mount_request import (
    DEFAULT_URL,
    OPTIONS_HELP,
    MountRequest,
    config_of,
    request_of,
)
from vaultfs.bridge.daemon.config import MountConfig
from vaultfs.bridge.daemon.logs import setup_logging, stderr_is_journal
from vaultfs.profiles import ProfileError

if TYPE_CHECKING:
    from vaultfs.client import TokenLogin

__all__ = ["register"]

log = logging.getLogger(__name__)

#: longest the parent of a daemonised mount waits for the mount to come up
_START_TIMEOUT = 120.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``mount`` to the ``vaultfs`` parser."""
    mount = sub.add_parser(
        "mount",
        help="mount a vault as a directory tree",
        usage="vaultfs mount PROFILE [options]\n"
        "       vaultfs mount [URL] MOUNTPOINT --user NAME [options]",
    )
    mount.add_argument("url", nargs="?", help=f"the vault (default {DEFAULT_URL})")
    mount.add_argument("target", metavar="MOUNTPOINT|PROFILE")
    mount.add_argument("--user", help="user name to log in as")
    mount.add_argument(
        "--password-file", type=Path, help="read the password from this 0600 file (first line)"
    )
    mount.add_argument(
        "-o", dest="options", action="append", default=[], metavar="OPTIONS", help=OPTIONS_HELP
    )
    mount.add_argument(
        "--device-code",
        action="store_true",
        help="single sign-on without a browser here: show a code to approve on another device",
    )
    mount.add_argument("--foreground", "-f", action="store_true", help="do not daemonise")
    logging_arguments(mount)
    # The daemon reports readiness on ``ready_fd`` (set in the child, ``_daemonise``).
    mount.set_defaults(handler=_mount, ready_fd=None)


def _mount(args: argparse.Namespace) -> int:
    """``vaultfs mount``: the request, the password or single sign-on, then the mount."""
    try:
        request = request_of(args)
        config = config_of(request)
    except (ProfileError, argparse.ArgumentTypeError) as exc:
        print(f"vaultfs mount: {exc}", file=sys.stderr)
        return 2
    if control.clear_dead_mount(config.mountpoint):
        print(f"vaultfs mount: cleared the dead mount at {config.mountpoint}", file=sys.stderr)
    if request.profile is not None:
        config.mountpoint.mkdir(parents=True, exist_ok=True)
    if not config.mountpoint.is_dir():
        print(f"vaultfs mount: {config.mountpoint} is not a directory", file=sys.stderr)
        return 2
    try:
        config.session_source = _single_sign_on(args, request, config)
        if config.session_source is None:
            config.password = find_password(config.url, config.user, request.password_file)
    except (CredentialError, errors.VaultError) as exc:
        message = str(exc) if isinstance(exc, CredentialError) else _failure(exc, config)
        print(f"vaultfs mount: {message}", file=sys.stderr)
        return 2 if isinstance(exc, CredentialError) else 1
    if not args.foreground:
        return _daemonise(args, request, config)
    return _run_foreground(args, config)


def _single_sign_on(
    args: argparse.Namespace, request: MountRequest, config: MountConfig
) -> TokenLogin | None:
    """The session source of a user the vault's discovery names an OAuth profile for
    (None: a password user, or a password file was named). Signs in interactively when
    no sign-in is stored and someone is there to approve (a terminal, or
    ``--device-code``)."""
    if request.password_file is not None:
        return None
    # Imported here: single sign-on (Authlib) is for the commands that sign in.
    from vaultfs.bridge.commands import signin

    settings = signin.SsoSettings.from_table(request.oauth)
    discovery = signin.how_user_signs_in(
        config.url, config.user, settings, kept=config.cache_dir / "sign-in.json"
    )
    if not discovery.sso:
        return None
    setup = signin.prepare(config.url, config.user, discovery, settings)
    if setup.store.load() is None:
        if not (args.device_code or sys.stdin.isatty()):
            again = request.profile or f"--url {config.url} --user {config.user}"
            raise CredentialError(
                f"{config.user} signs in through {setup.profile.label} and no sign-in is "
                f"stored: run `vaultfs login {again}` first (or mount with --device-code)"
            )
        signin.interactive_sign_in(setup, device=args.device_code)
    return signin.token_login(setup)


def _run_foreground(args: argparse.Namespace, config: MountConfig) -> int:
    setup_logging("DEBUG" if config.debug else log_level(args), args.log_file)
    ready_fd: int | None = args.ready_fd

    def ready() -> None:
        nonlocal ready_fd
        if ready_fd is not None:
            os.write(ready_fd, b"ok\n")
            os.close(ready_fd)
            ready_fd = None

    # Imported here: the daemon loads pyfuse3, which no other command needs.
    from vaultfs.bridge.daemon.mount import run_mount

    try:
        trio.run(run_mount, config, ready)
    except (errors.VaultError, OSError, RuntimeError) as exc:
        message = _failure(exc, config)
        log.error("%s", message)
        if ready_fd is not None:
            os.write(ready_fd, f"error: {message}\n".encode())
        elif args.log_file is not None:  # else the log line above went to stderr
            print(f"vaultfs mount: {message}", file=sys.stderr)
        return 1
    return 0


def _failure(exc: BaseException, config: MountConfig) -> str:
    if isinstance(exc, errors.SignInExpired):
        return f"sign-in of {config.user} at {config.url} refused: {exc}"
    if isinstance(exc, errors.UsernameOrPasswordIncorrect) and config.session_source:
        return f"sign-in of {config.user} at {config.url} refused: {exc}"
    if isinstance(exc, errors.UsernameOrPasswordIncorrect):
        return f"login to {config.url} as {config.user} failed: wrong user name or password"
    if isinstance(exc, errors.AlreadyInUse):
        return f"cannot mount {config.mountpoint}: {exc}"
    if isinstance(exc, errors.VaultUnavailable):
        return f"cannot reach the vault at {config.url}: {exc}"
    if isinstance(exc, errors.VaultError):
        return f"login to {config.url} as {config.user} failed: {exc.type}: {exc}"
    return f"cannot mount {config.mountpoint}: {exc}"


def _daemonise(args: argparse.Namespace, request: MountRequest, config: MountConfig) -> int:
    """Fork the mount off as a detached child and wait for it to report.

    A fork, not a new interpreter: the child starts from what this process has imported
    and found out (0.4-0.7 s of a mount's start, the discovery call), and the password
    stays in memory. Nothing runs yet but this thread (trio starts in the child)."""
    config.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    # When stderr is the journal (a .mount unit running mount(8) and the helper) the
    # daemon keeps it; elsewhere it has no terminal and logs to a file.
    log_file: Path | None = args.log_file
    if log_file is None and not stderr_is_journal():
        log_file = config.cache_dir / "vaultfs.log"
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the daemon: its own session, no terminal
        code = 1
        try:
            os.close(read_fd)
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2) if log_file is not None else (0, 1):
                os.dup2(null, fd)
            args.log_file, args.ready_fd = log_file, write_fd
            code = _run_foreground(args, config)
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        answer = _read_with_timeout(pipe, _START_TIMEOUT)
    if answer == "ok":
        return 0
    if answer.startswith("error: "):
        print(f"vaultfs mount: {answer.removeprefix('error: ')}", file=sys.stderr)
    else:
        ended, status = os.waitpid(pid, os.WNOHANG)
        exit_code = os.waitstatus_to_exitcode(status) if ended else None
        where = f"; see {log_file}" if log_file is not None else ""
        print(
            f"vaultfs mount: the mount did not come up (exit {exit_code}){where}",
            file=sys.stderr,
        )
        if exit_code is None:
            os.kill(pid, signal.SIGTERM)
    return 1


def _read_with_timeout(pipe: BinaryIO, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([pipe], [], [], left)[0]:
            break
        chunk = os.read(pipe.fileno(), 4096)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip()
