"""Sub-commands of the bridge half: ``mount``, ``umount``, ``status``, ``flush``,
``demo``, ``set-password``, ``login``, ``logout``, ``install-helper``, and ``actions``,
``do``, ``event`` (``lifecycle``).

Owns the command line of the bridge: what a mount is asked for (a named profile, or
URL, mount point and ``-o`` FUSE-style options), how the user signs in (the vault's
discovery first: a password, whose way into the daemon is ``credentials`` and stdin,
never argv; or single sign-on, ``signin``, whose tokens the daemon reads from their
store itself), and daemonising. A daemonised mount is a child process
started in its own session that reports on a pipe once the mount answers, so the
parent exits 0 only when the mount is up and with the child's error otherwise. The
commands that manage a running mount are in ``manage``.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import trio

from vaultfs import errors
from vaultfs.bridge.commands import control, install_helper, lifecycle, manage, search, sync
from vaultfs.bridge.commands.credentials import CredentialError, find_password, store_in_keyring
from vaultfs.bridge.daemon.config import MountConfig, default_cache_dir
from vaultfs.bridge.daemon.logs import setup_logging, stderr_is_journal
from vaultfs.profiles import OAUTH_KEYS, ProfileError, load_profile, names_profile

if TYPE_CHECKING:
    from vaultfs.client import TokenLogin

__all__ = ["parse_mount_options", "parse_size", "register"]

log = logging.getLogger(__name__)

DEFAULT_URL = "http://127.0.0.1:8817"
#: longest the parent of a daemonised mount waits for the mount to come up
_START_TIMEOUT = 120.0
_SIZE_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_FLAGS = {"ro", "rw", "allow_other", "allow_delete", "nonempty", "debug"}
_VALUED = {"cache_dir", "cache_size", "poll_interval", "attr_timeout", "retries"}
#: options naming who logs in; the same as ``--user`` and ``--password-file``
_LOGIN = {"user", "username", "password_file"}
_OPTIONS_HELP = (
    "comma-separated, repeatable: ro, allow_other, allow_delete, nonempty, debug, "
    "cache_dir=DIR, "
    "cache_size=SIZE (default 1G), poll_interval=SECONDS (default 30), "
    "attr_timeout=SECONDS (default 3600), retries=N (default 6), username=NAME, "
    "password_file=FILE"
)


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
            if sep and name in _VALUED | _LOGIN:
                options[name] = arg
            elif not sep and name in _FLAGS:
                options[name] = True
            else:
                raise argparse.ArgumentTypeError(f"unknown mount option: {item!r}")
    return options


def _number(name: str, text: str, kind: type[float] | type[int] = float) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} must be a number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{name} must not be negative")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this half's sub-commands to the ``vaultfs`` parser."""
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
        "-o", dest="options", action="append", default=[], metavar="OPTIONS", help=_OPTIONS_HELP
    )
    mount.add_argument(
        "--device-code",
        action="store_true",
        help="single sign-on without a browser here: show a code to approve on another device",
    )
    mount.add_argument("--foreground", "-f", action="store_true", help="do not daemonise")
    _logging_arguments(mount)
    # Internal: the daemon child reports readiness on this fd and reads its password
    # from stdin (never argv).
    mount.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    mount.add_argument("--password-stdin", action="store_true", help=argparse.SUPPRESS)
    # Internal: the profile's [oauth] settings, for the daemon child (none is secret).
    mount.add_argument("--oauth-setting", action="append", default=[], help=argparse.SUPPRESS)
    mount.set_defaults(handler=_mount)

    manage.register(sub)
    sync.register(sub)
    lifecycle.register(sub)
    search.register(sub)

    demo = sub.add_parser("demo", help="start a local demo vault and mount it")
    demo.add_argument("mountpoint", nargs="?", type=Path, default=Path.home() / "vaultfs-demo")
    _logging_arguments(demo)
    demo.set_defaults(handler=_demo)

    password = sub.add_parser(
        "set-password", help="store a password in the system keyring (read from a prompt)"
    )
    password.add_argument("target", nargs="?", metavar="PROFILE")
    password.add_argument("--url", help="the vault, when no profile is named")
    password.add_argument("--user", help="the user name, when no profile is named")
    password.set_defaults(handler=_set_password)

    login = sub.add_parser(
        "login",
        help="sign in through the vault's identity provider (single sign-on) ahead of a mount",
    )
    login.add_argument("target", nargs="?", metavar="PROFILE")
    login.add_argument("--url", help="the vault, when no profile is named")
    login.add_argument("--user", help="the user name, when no profile is named")
    login.add_argument(
        "--device-code", action="store_true", help="show a code to approve on another device"
    )
    _logging_arguments(login)
    login.set_defaults(handler=_login)

    logout = sub.add_parser(
        "logout", help="forget (and revoke at the identity provider) a single sign-on"
    )
    logout.add_argument("target", nargs="?", metavar="PROFILE")
    logout.add_argument("--url", help="the vault, when no profile is named")
    logout.add_argument("--user", help="the user name, when no profile is named")
    _logging_arguments(logout)
    logout.set_defaults(handler=_logout)

    helper = sub.add_parser(
        "install-helper",
        help="link mount.fuse.vaultfs into /sbin so that mount -t fuse.vaultfs and fstab work",
    )
    helper.add_argument("--dir", type=Path, default=install_helper.HELPER_DIR, help="default /sbin")
    helper.add_argument("--remove", action="store_true", help="remove the link instead")
    helper.set_defaults(handler=_install_helper)


def _logging_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    parser.add_argument(
        "--debug", action="store_true", help="log at DEBUG, with every API call and its duration"
    )
    parser.add_argument("--log-file", type=Path, help="log here instead of stderr")


def _level(args: argparse.Namespace) -> str:
    return "DEBUG" if args.debug else str(args.log_level)


# --- what is mounted --------------------------------------------------------------


@dataclass
class _Request:
    """A mount as asked for, before the password is known."""

    url: str
    user: str
    mountpoint: Path
    password_file: Path | None
    #: ``-o`` option strings, login ones (user, password_file) taken out
    options: list[str] = field(default_factory=list)
    profile: str | None = None
    #: single sign-on settings (the profile's ``[oauth]`` table)
    oauth: dict[str, str] = field(default_factory=dict)


def _request(args: argparse.Namespace) -> _Request:
    """Profile, command line and ``-o`` options, merged (the command line wins)."""
    if args.url is None and names_profile(args.target):
        profile = load_profile(args.target)
        url, user, mountpoint = profile.url, profile.user, profile.mountpoint
        password_file, options, name = profile.password_file, profile.options, profile.name
        oauth = dict(profile.oauth)
    else:
        url, user, mountpoint = args.url or DEFAULT_URL, None, Path(args.target)
        password_file, options, name = None, [], None
        oauth = {}
    for setting in args.oauth_setting:
        key, _, value = setting.partition("=")
        if key in OAUTH_KEYS:
            oauth[key] = value
    options = [*options, *args.options]
    parsed = parse_mount_options(options)
    user = args.user or str(parsed.get("username") or parsed.get("user") or user or "")
    if not user:
        raise argparse.ArgumentTypeError("no user name: give --user NAME or -o username=NAME")
    if args.password_file is not None:
        password_file = args.password_file
    elif parsed.get("password_file"):
        password_file = Path(str(parsed["password_file"]))
    kept = [
        item
        for value in options
        for item in value.split(",")
        if item and item.partition("=")[0] not in _LOGIN
    ]
    return _Request(
        url=url.rstrip("/"),
        user=user,
        mountpoint=mountpoint.expanduser().resolve(),
        password_file=password_file.expanduser() if password_file else None,
        options=kept,
        profile=name,
        oauth=oauth,
    )


def _config(request: _Request) -> MountConfig:
    options = parse_mount_options(request.options)
    cache_dir = options.get("cache_dir")
    return MountConfig(
        url=request.url,
        user=request.user,
        password="",
        mountpoint=request.mountpoint,
        cache_dir=Path(str(cache_dir)).expanduser()
        if cache_dir
        else default_cache_dir(request.url, request.user),
        cache_size=parse_size(str(options.get("cache_size", "1G"))),
        poll_interval=_number("poll_interval", str(options.get("poll_interval", 30))),
        attr_timeout=_number("attr_timeout", str(options.get("attr_timeout", 3600))),
        retries=int(_number("retries", str(options.get("retries", 6)), int)),
        read_only=bool(options.get("ro")),
        allow_other=bool(options.get("allow_other")),
        allow_delete=bool(options.get("allow_delete")),
        nonempty=bool(options.get("nonempty")),
        debug=bool(options.get("debug")),
    )


# --- mount ------------------------------------------------------------------------


def _mount(args: argparse.Namespace) -> int:
    try:
        request = _request(args)
        config = _config(request)
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
        if args.password_stdin:
            config.password = sys.stdin.readline().rstrip("\n")
        else:
            config.session_source = _single_sign_on(args, request, config)
            if config.session_source is None:
                config.password = find_password(config.url, config.user, request.password_file)
    except (CredentialError, errors.VaultError) as exc:
        message = str(exc) if isinstance(exc, CredentialError) else _failure(exc, config)
        print(f"vaultfs mount: {message}", file=sys.stderr)
        if args.ready_fd is not None:  # a daemon child: its parent says why
            os.write(args.ready_fd, f"error: {message}\n".encode())
        return 2 if isinstance(exc, CredentialError) else 1
    if not args.foreground:
        return _daemonise(args, request, config)
    return _run_foreground(args, config)


def _single_sign_on(
    args: argparse.Namespace, request: _Request, config: MountConfig
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
    discovery = signin.how_user_signs_in(config.url, config.user, settings)
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
    setup_logging("DEBUG" if config.debug else _level(args), args.log_file)
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


def _daemonise(args: argparse.Namespace, request: _Request, config: MountConfig) -> int:
    """Start the mount as a detached child and wait for it to report."""
    config.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    # When stderr is the journal (a .mount unit running mount(8) and the helper) the
    # daemon keeps it; elsewhere it has no terminal and logs to a file.
    log_file: Path | None = args.log_file
    if log_file is None and not stderr_is_journal():
        log_file = config.cache_dir / "vaultfs.log"
    read_fd, write_fd = os.pipe()
    argv = [
        sys.executable, "-m", "vaultfs", "mount", config.url, str(config.mountpoint),
        "--user", config.user, "--foreground",
        "--ready-fd", str(write_fd), "--log-level", _level(args),
    ]  # fmt: skip
    # A password goes through stdin; a single sign-on's tokens the child reads from
    # their store itself (it renews them there), given where that is.
    if config.session_source is None:
        argv.append("--password-stdin")
    for key, value in request.oauth.items():
        argv += ["--oauth-setting", f"{key}={value}"]
    if log_file is not None:
        argv += ["--log-file", str(log_file)]
    if request.options:
        argv += ["-o", ",".join(request.options)]
    child = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL if log_file is not None else None,
        pass_fds=(write_fd,),
        start_new_session=True,
    )
    os.close(write_fd)
    assert child.stdin is not None
    if config.session_source is None:
        child.stdin.write(config.password.encode() + b"\n")
    child.stdin.close()
    with os.fdopen(read_fd, "rb") as pipe:
        answer = _read_with_timeout(pipe, _START_TIMEOUT)
    if answer == "ok":
        return 0
    if answer.startswith("error: "):
        print(f"vaultfs mount: {answer.removeprefix('error: ')}", file=sys.stderr)
    else:
        code = child.poll()
        where = f"; see {log_file}" if log_file is not None else ""
        print(f"vaultfs mount: the mount did not come up (exit {code}){where}", file=sys.stderr)
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


# --- the others -------------------------------------------------------------------


def _demo(args: argparse.Namespace) -> int:
    from vaultfs.bridge.commands.demo import run_demo  # mounts: loads pyfuse3

    setup_logging(_level(args), args.log_file)
    return run_demo(args.mountpoint)


def _set_password(args: argparse.Namespace) -> int:
    try:
        if args.target is not None:
            profile = load_profile(args.target)
            url, user = profile.url, profile.user
        elif args.url and args.user:
            url, user = args.url, args.user
        else:
            print("vaultfs set-password: name a profile, or give --url and --user", file=sys.stderr)
            return 2
        if sys.stdin.isatty():
            password = getpass.getpass(f"Password for {user} at {url}: ")
        else:
            password = sys.stdin.readline().rstrip("\n")
        backend = store_in_keyring(url, user, password)
    except (ProfileError, CredentialError) as exc:
        print(f"vaultfs set-password: {exc}", file=sys.stderr)
        return 1
    print(f"stored the password of {user} at {url} in the keyring ({backend})")
    return 0


def _who(args: argparse.Namespace, command: str) -> tuple[str, str, dict[str, str]] | None:
    """(url, user, oauth settings) of a profile or of --url and --user."""
    if args.target is not None:
        profile = load_profile(args.target)
        return profile.url, profile.user, dict(profile.oauth)
    if args.url and args.user:
        return args.url.rstrip("/"), args.user, {}
    print(f"vaultfs {command}: name a profile, or give --url and --user", file=sys.stderr)
    return None


def _login(args: argparse.Namespace) -> int:
    from vaultfs.bridge.commands import signin

    setup_logging(_level(args), args.log_file)
    try:
        who = _who(args, "login")
        if who is None:
            return 2
        url, user, oauth = who
        settings = signin.SsoSettings.from_table(oauth)
        discovery = signin.how_user_signs_in(url, user, settings)
        if not discovery.sso:
            print(
                f"vaultfs login: {user} signs in to {url} with a password "
                "(store it with `vaultfs set-password`)",
                file=sys.stderr,
            )
            return 1
        setup = signin.prepare(url, user, discovery, settings)
        signin.interactive_sign_in(setup, device=args.device_code)
        vault = signin.check_session(setup)
    except (ProfileError, CredentialError) as exc:
        print(f"vaultfs login: {exc}", file=sys.stderr)
        return 1
    except errors.VaultError as exc:
        print(f"vaultfs login: {exc.type}: {exc}", file=sys.stderr)
        return 1
    print(f"signed in to {url} as {user} (vault {vault}); `vaultfs mount` needs no prompt now")
    return 0


def _logout(args: argparse.Namespace) -> int:
    from vaultfs.bridge.commands import signin

    setup_logging(_level(args), args.log_file)
    try:
        who = _who(args, "logout")
        if who is None:
            return 2
        url, user, oauth = who
        settings = signin.SsoSettings.from_table(oauth)
        revoked, found = signin.sign_out(url, user, settings)
    except (ProfileError, CredentialError) as exc:
        print(f"vaultfs logout: {exc}", file=sys.stderr)
        return 1
    if not found:
        print(f"no sign-in of {user} at {url} was stored")
        return 0
    where = "revoked at the identity provider and " if revoked else ""
    print(f"the sign-in of {user} at {url} is {where}forgotten")
    return 0


def _install_helper(args: argparse.Namespace) -> int:
    try:
        message = install_helper.install(args.dir, remove=args.remove)
    except OSError as exc:
        print(f"vaultfs install-helper: {exc}", file=sys.stderr)
        return 1
    print(message)
    return 0
