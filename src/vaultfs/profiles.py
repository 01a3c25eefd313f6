"""Named mount profiles from ``~/.config/vaultfs/config.toml``.

A profile holds what ``vaultfs mount`` would otherwise take on its command line, so
``vaultfs mount work`` is enough::

    [profiles.work]
    url = "https://vault.example.com"
    user = "editor@example.com"
    mountpoint = "~/vault"
    password_file = "~/.config/vaultfs/work.password"   # optional; else env, keyring, prompt
    cache_size = "2G"                                     # optional, as -o cache_size=
    poll_interval = 60                                    # optional, as -o poll_interval=
    options = ["allow_delete"]                            # any other -o option

    [profiles.work.oauth]          # optional: single sign-on settings discovery lacks
    client_id = "vaultfs"          # vaultfs's client id at the authorization server
    scopes = "openid offline_access"
    profile = "corp_idp"           # the vault's OAuth profile, when it has several
    device_authorization_endpoint = "https://idp.example.com/device"
    token_file = "~/.config/vaultfs/work.tokens"   # else the keyring, else a 0600 file

``VAULTFS_CONFIG`` names another file (the system unit uses /etc/vaultfs/config.toml).
On the command line, an argument without a ``/`` names a profile (``vaultfs mount
work``); a mount point in the current directory is written ``./dir``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "OAUTH_KEYS",
    "Profile",
    "ProfileError",
    "config_path",
    "load_profile",
    "names_profile",
]


class ProfileError(ValueError):
    """The config file or a profile in it is missing or malformed."""


@dataclass(frozen=True)
class Profile:
    name: str
    url: str
    user: str
    mountpoint: Path
    password_file: Path | None = None
    options: list[str] = field(default_factory=list)
    #: the ``[profiles.NAME.oauth]`` table (single sign-on settings), keys in ``OAUTH_KEYS``
    oauth: dict[str, str] = field(default_factory=dict)


#: keys of a profile's ``oauth`` table
OAUTH_KEYS = ("client_id", "scopes", "profile", "device_authorization_endpoint", "token_file")
#: profile keys that are mount options of their own (``key=value`` in ``options``)
_OPTION_KEYS = ("cache_size", "poll_interval", "cache_dir")


def names_profile(argument: str) -> bool:
    """Whether a command-line argument names a profile (rather than a path or URL)."""
    return bool(argument) and "/" not in argument


def config_path() -> Path:
    explicit = os.environ.get("VAULTFS_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "vaultfs" / "config.toml"


def _path(value: object, what: str) -> Path:
    if not isinstance(value, str) or not value:
        raise ProfileError(f"{what} must be a non-empty string")
    return Path(value).expanduser()


def load_profile(name: str, path: Path | None = None) -> Profile:
    """Read profile ``name``; raises ProfileError naming what is wrong."""
    path = path or config_path()
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ProfileError(f"no config file at {path} (profile {name!r} asked for)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: {exc}") from None
    section = data.get("profiles", {}).get(name)
    if not isinstance(section, dict):
        raise ProfileError(f"{path} has no [profiles.{name}] section")
    where = f"{path} [profiles.{name}]"
    for key in ("url", "user", "mountpoint"):
        if not isinstance(section.get(key), str) or not section[key]:
            raise ProfileError(f"{where}: {key} is required")
    options = section.get("options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise ProfileError(f"{where}: options must be a list of strings")
    options = list(options)
    for key in _OPTION_KEYS:
        value = section.get(key)
        if isinstance(value, bool) or not isinstance(value, str | int | float | None):
            raise ProfileError(f"{where}: {key} must be a string or a number")
        if value is not None:
            options.append(f"{key}={value}")
    password_file = section.get("password_file")
    oauth = section.get("oauth", {})
    if not isinstance(oauth, dict):
        raise ProfileError(f"{where}: oauth must be a table")
    for key, value in oauth.items():
        if key not in OAUTH_KEYS or not isinstance(value, str):
            raise ProfileError(
                f"{where}.oauth: {key} is not one of {', '.join(OAUTH_KEYS)} with a string value"
            )
    return Profile(
        name=name,
        url=section["url"],
        user=section["user"],
        mountpoint=_path(section["mountpoint"], f"{where}: mountpoint"),
        password_file=_path(password_file, f"{where}: password_file") if password_file else None,
        options=options,
        oauth=dict(oauth),
    )
