"""Sub-commands of the bridge half: ``mount``, ``umount`` and ``demo``.

Owns the command line of the bridge: option parsing (``-o`` FUSE-style options),
where the password comes from (``VAULTFS_PASSWORD``, ``--password-file``, a prompt on
a terminal; never argv), logging setup, and daemonising. A daemonised mount is a child
process started in its own session that reports on a pipe once the mount answers, so
the parent exits 0 only when the mount is up and with the child's error otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import logging
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import BinaryIO

import trio

from vaultfs import errors

from .demo import run_demo
from .mount import MountConfig, default_cache_dir, run_mount

__all__ = ["parse_mount_options", "parse_size", "register"]

log = logging.getLogger(__name__)

DEFAULT_URL = "http://127.0.0.1:8817"
#: longest the parent of a daemonised mount waits for the mount to come up
_START_TIMEOUT = 120.0
_SIZE_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_FLAGS = {"ro", "allow_other", "allow_delete", "debug", "rw"}
_VALUED = {"cache_dir", "cache_size", "poll_interval", "attr_timeout"}


def parse_size(text: str) -> int:
    """``512M`` -> bytes (suffixes K, M, G, T; optional trailing B)."""
    text = text.strip().upper().removesuffix("B")
    suffix = text[-1:] if text[-1:] in _SIZE_SUFFIXES else ""
    number = text[: len(text) - len(suffix)]
    try:
        value = int(float(number) * _SIZE_SUFFIXES[suffix])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"size must be positive: {text!r}")
    return value


def parse_mount_options(values: list[str]) -> dict[str, str | bool]:
    """``-o ro,cache_size=2G`` (repeatable) -> {"ro": True, "cache_size": "2G"}."""
    options: dict[str, str | bool] = {}
    for value in values:
        for item in filter(None, value.split(",")):
            name, sep, arg = item.partition("=")
            if sep and name in _VALUED:
                options[name] = arg
            elif not sep and name in _FLAGS:
                options[name] = True
            else:
                raise argparse.ArgumentTypeError(f"unknown mount option: {item!r}")
    return options


def _positive_float(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} must be a number of seconds") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{name} must not be negative")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this half's sub-commands to the ``vaultfs`` parser."""
    mount = sub.add_parser("mount", help="mount a vault as a directory tree")
    mount.add_argument("url", nargs="?", default=DEFAULT_URL, help=f"default {DEFAULT_URL}")
    mount.add_argument("mountpoint", type=Path)
    mount.add_argument("--user", required=True, help="user name to log in as")
    mount.add_argument(
        "--password-file", type=Path, help="read the password from this file (first line)"
    )
    mount.add_argument(
        "-o", dest="options", action="append", default=[], metavar="OPTIONS",
        help="comma-separated: ro, allow_other, allow_delete, debug, cache_dir=DIR, "
        "cache_size=SIZE (default 1G), poll_interval=SECONDS (default 30), attr_timeout=SECONDS",
    )  # fmt: skip
    mount.add_argument("--foreground", "-f", action="store_true", help="do not daemonise")
    _logging_arguments(mount)
    # Internal: the daemon child reports readiness on this fd and reads its password
    # from stdin (never argv).
    mount.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    mount.add_argument("--password-stdin", action="store_true", help=argparse.SUPPRESS)
    mount.set_defaults(handler=_mount)

    umount = sub.add_parser("umount", help="flush and unmount a vaultfs mount")
    umount.add_argument("mountpoint", type=Path)
    umount.add_argument("--timeout", type=float, default=60.0, help="seconds to wait")
    umount.set_defaults(handler=_umount)

    demo = sub.add_parser("demo", help="start a local demo vault and mount it")
    demo.add_argument("mountpoint", nargs="?", type=Path, default=Path.home() / "vaultfs-demo")
    _logging_arguments(demo)
    demo.set_defaults(handler=_demo)


def _logging_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    parser.add_argument("--log-file", type=Path, help="log here instead of stderr")


def setup_logging(level: str, log_file: Path | None) -> None:
    handler: logging.Handler
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_file)
        os.chmod(log_file, 0o600)
    else:
        handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # httpx logs request URLs at INFO; keep them out of the mount's log.
    logging.getLogger("httpx").setLevel(logging.WARNING)


# --- mount ------------------------------------------------------------------------


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\n")
    if args.password_file is not None:
        return (
            args.password_file.read_text().splitlines()[0]
            if args.password_file.stat().st_size
            else ""
        )
    env = os.environ.get("VAULTFS_PASSWORD")
    if env is not None:
        return env
    if sys.stdin.isatty():
        return getpass.getpass(f"Password for {args.user}: ")
    raise SystemExit("vaultfs mount: no password (set VAULTFS_PASSWORD or use --password-file)")


def _config(args: argparse.Namespace, password: str) -> MountConfig:
    options = parse_mount_options(args.options)
    url = args.url.rstrip("/")
    cache_dir = options.get("cache_dir")
    return MountConfig(
        url=url,
        user=args.user,
        password=password,
        mountpoint=args.mountpoint.resolve(),
        cache_dir=Path(str(cache_dir)).expanduser()
        if cache_dir
        else default_cache_dir(url, args.user),
        cache_size=parse_size(str(options.get("cache_size", "1G"))),
        poll_interval=_positive_float("poll_interval", str(options.get("poll_interval", 30))),
        attr_timeout=_positive_float("attr_timeout", str(options.get("attr_timeout", 1))),
        read_only=bool(options.get("ro")),
        allow_other=bool(options.get("allow_other")),
        allow_delete=bool(options.get("allow_delete")),
        debug=bool(options.get("debug")),
    )


def _mount(args: argparse.Namespace) -> int:
    try:
        config = _config(args, "")
    except (argparse.ArgumentTypeError, OSError) as exc:
        print(f"vaultfs mount: {exc}", file=sys.stderr)
        return 2
    if not config.mountpoint.is_dir():
        print(f"vaultfs mount: {config.mountpoint} is not a directory", file=sys.stderr)
        return 2
    if not args.foreground:
        return _daemonise(args, config)
    try:
        config.password = _password(args)
    except OSError as exc:
        print(f"vaultfs mount: cannot read the password: {exc}", file=sys.stderr)
        return 2
    level = "DEBUG" if config.debug else args.log_level
    setup_logging(level, args.log_file)
    ready_fd: int | None = args.ready_fd

    def ready() -> None:
        nonlocal ready_fd
        if ready_fd is not None:
            os.write(ready_fd, b"ok\n")
            os.close(ready_fd)
            ready_fd = None

    try:
        trio.run(run_mount, config, ready)
    except (errors.VaultError, OSError, RuntimeError) as exc:
        message = _failure(exc, config)
        log.error("%s", message)
        if ready_fd is not None:
            os.write(ready_fd, f"error: {message}\n".encode())
        else:
            print(f"vaultfs mount: {message}", file=sys.stderr)
        return 1
    return 0


def _failure(exc: BaseException, config: MountConfig) -> str:
    if isinstance(exc, errors.UsernameOrPasswordIncorrect):
        return f"login to {config.url} as {config.user} failed: wrong user name or password"
    if isinstance(exc, errors.VaultUnavailable):
        return f"cannot reach the vault at {config.url}: {exc}"
    if isinstance(exc, errors.VaultError):
        return f"login to {config.url} as {config.user} failed: {exc.type}: {exc}"
    return f"cannot mount {config.mountpoint}: {exc}"


def _daemonise(args: argparse.Namespace, config: MountConfig) -> int:
    """Start the mount as a detached child and wait for it to report."""
    password = _password(args)
    log_file = args.log_file or config.cache_dir / "vaultfs.log"
    config.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    read_fd, write_fd = os.pipe()
    argv = [
        sys.executable, "-m", "vaultfs", "mount", config.url, str(config.mountpoint),
        "--user", config.user, "--foreground", "--password-stdin",
        "--ready-fd", str(write_fd), "--log-level", args.log_level, "--log-file", str(log_file),
    ]  # fmt: skip
    for value in args.options:
        argv += ["-o", value]
    child = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(write_fd,),
        start_new_session=True,
    )
    os.close(write_fd)
    assert child.stdin is not None
    child.stdin.write(password.encode() + b"\n")
    child.stdin.close()
    with os.fdopen(read_fd, "rb") as pipe:
        answer = _read_with_timeout(pipe, _START_TIMEOUT)
    if answer == "ok":
        return 0
    if answer.startswith("error: "):
        print(f"vaultfs mount: {answer.removeprefix('error: ')}", file=sys.stderr)
    else:
        code = child.poll()
        print(
            f"vaultfs mount: the mount did not come up (exit {code}); see {log_file}",
            file=sys.stderr,
        )
        if code is None:
            child.terminate()
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


# --- umount -----------------------------------------------------------------------


def _daemon_pid(mountpoint: Path) -> int | None:
    try:
        status = json.loads((mountpoint / ".vaultfs" / "status").read_text())
        return int(status["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _umount(args: argparse.Namespace) -> int:
    mountpoint = args.mountpoint.resolve()
    pid = _daemon_pid(mountpoint)
    if pid is not None:
        # The daemon flushes pending check-ins, then unmounts itself.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 15)
        if _wait_gone(pid, args.timeout):
            return 0
        print(f"vaultfs umount: daemon {pid} still running; unmounting anyway", file=sys.stderr)
    result = subprocess.run(["fusermount3", "-u", str(mountpoint)], check=False)
    if result.returncode != 0:
        return 1
    if pid is not None and not _wait_gone(pid, args.timeout):
        return 1
    return 0


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (an exited child its parent has not reaped does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


# --- demo -------------------------------------------------------------------------


def _demo(args: argparse.Namespace) -> int:
    setup_logging(args.log_level, args.log_file)
    return run_demo(args.mountpoint)
