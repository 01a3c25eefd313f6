"""What a mount is asked for: a named profile, or URL, mount point and user, with ``-o``
FUSE-style options, merged (the command line wins) into a ``MountRequest``, and the
``MountConfig`` the daemon is started with. Parsing only: nothing here signs in or
mounts (``mount_command`` does).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from vaultfs.bridge.daemon.config import (
    MAX_INODES,
    WALK_BURST,
    WALK_CALLS,
    MountConfig,
    default_cache_dir,
)
from vaultfs.profiles import load_profile, names_profile

__all__ = [
    "DEFAULT_URL",
    "OPTIONS_HELP",
    "MountRequest",
    "config_of",
    "parse_mount_options",
    "parse_size",
    "request_of",
]

DEFAULT_URL = "http://127.0.0.1:8817"
_SIZE_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_FLAGS = {"ro", "rw", "allow_other", "allow_delete", "nonempty", "debug"}
_VALUED = {
    "cache_dir",
    "cache_size",
    "poll_interval",
    "attr_timeout",
    "max_inodes",
    "walk_calls",
    "walk_burst",
    "retries",
    "notify",
}
#: options naming who logs in; the same as ``--user`` and ``--password-file``
_LOGIN = {"user", "username", "password_file"}
OPTIONS_HELP = (
    "comma-separated, repeatable: ro, allow_other, allow_delete, nonempty, debug, "
    "cache_dir=DIR, "
    "cache_size=SIZE (default 1G), poll_interval=SECONDS (default 30), "
    f"attr_timeout=SECONDS (default 3600), max_inodes=N (default {MAX_INODES}), "
    "walk_calls=N (a day, default 5000), walk_burst=N (per 5 minutes, default 200), "
    "retries=N (default 6), notify=on|off (desktop "
    "notifications, default on), username=NAME, password_file=FILE"
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


@dataclass
class MountRequest:
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


def request_of(args: argparse.Namespace) -> MountRequest:
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
    return MountRequest(
        url=url.rstrip("/"),
        user=user,
        mountpoint=mountpoint.expanduser().resolve(),
        password_file=password_file.expanduser() if password_file else None,
        options=kept,
        profile=name,
        oauth=oauth,
    )


def config_of(request: MountRequest) -> MountConfig:
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
        max_inodes=int(_number("max_inodes", str(options.get("max_inodes", MAX_INODES)), int)),
        walk_calls=int(_number("walk_calls", str(options.get("walk_calls", WALK_CALLS)), int)),
        walk_burst=int(_number("walk_burst", str(options.get("walk_burst", WALK_BURST)), int)),
        retries=int(_number("retries", str(options.get("retries", 6)), int)),
        read_only=bool(options.get("ro")),
        allow_other=bool(options.get("allow_other")),
        allow_delete=bool(options.get("allow_delete")),
        nonempty=bool(options.get("nonempty")),
        debug=bool(options.get("debug")),
        notify=_on_off("notify", str(options.get("notify", "on"))),
    )


def _on_off(name: str, text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"{name} must be on or off, not {text!r}")
    return text == "on"
