"""Where a mount's password comes from, never the command line.

Owns the password sources and their order: a password file (``--password-file`` or
the profile's ``password_file``; refused when group or others may read it), then
``$VAULTFS_PASSWORD``, then the system keyring (service ``vaultfs <url>``, the user
name as account), then a prompt when stdin is a terminal. The ``keyring`` package is
imported only when it is asked, and a machine without a usable backend (a headless
root server) simply falls through to the next source.
"""

from __future__ import annotations

import getpass
import logging
import os
import stat
import sys
from pathlib import Path

__all__ = [
    "CredentialError",
    "find_password",
    "keyring_password",
    "read_password_file",
    "store_in_keyring",
]

log = logging.getLogger(__name__)


class CredentialError(Exception):
    """No password could be found, or a source of one is unsafe."""


def _service(url: str) -> str:
    return f"vaultfs {url.rstrip('/')}"


def read_password_file(path: Path) -> str:
    """The first line of ``path``, which only its owner may read."""
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRGRP | stat.S_IROTH | stat.S_IWGRP | stat.S_IWOTH):
            raise CredentialError(
                f"{path} is readable or writable by other users (mode "
                f"{stat.S_IMODE(mode):04o}); refusing to use it: chmod 600 {path}"
            )
        text = path.read_text()
    except OSError as exc:
        raise CredentialError(f"cannot read the password file {path}: {exc.strerror}") from None
    lines = text.splitlines()
    return lines[0] if lines else ""


def keyring_password(url: str, user: str) -> str | None:
    """The password stored in the system keyring, or None (also when there is no
    usable keyring at all)."""
    try:
        import keyring

        password: str | None = keyring.get_password(_service(url), user)
    # Backends fail in their own ways (no D-Bus, a locked collection, the "fail"
    # backend of a headless machine): every one of them means "not from here".
    except Exception as exc:
        log.debug("no password from the keyring: %s", type(exc).__name__)
        return None
    return password


def store_in_keyring(url: str, user: str, password: str) -> str:
    """Store ``password`` in the system keyring; returns the backend's name."""
    try:
        import keyring
        from keyring.backends.fail import Keyring as NoKeyring

        backend = keyring.get_keyring()
        if isinstance(backend, NoKeyring):
            raise CredentialError("no system keyring is available on this machine")
        keyring.set_password(_service(url), user, password)
    except CredentialError:
        raise
    except Exception as exc:
        raise CredentialError(f"the system keyring refused the password: {exc}") from None
    return type(backend).__module__


def find_password(url: str, user: str, password_file: Path | None) -> str:
    """The password for ``user`` at ``url`` from the first source that has one."""
    if password_file is not None:
        return read_password_file(password_file)
    env = os.environ.get("VAULTFS_PASSWORD")
    if env is not None:
        return env
    stored = keyring_password(url, user)
    if stored is not None:
        return stored
    if sys.stdin.isatty():
        return getpass.getpass(f"Password for {user} at {url}: ")
    raise CredentialError(
        "no password: use a password file (--password-file or the profile's "
        "password_file), VAULTFS_PASSWORD, or store it with `vaultfs set-password`"
    )
