"""Where the tokens of a single sign-on are kept: like a password, never on a command line.

Owns the one ``TokenStore`` of a vault and user: the profile's ``token_file`` when one is
named (a file only its owner may read, written as 0600); otherwise the system keyring
(service ``vaultfs-sso <url>``, the user name as account) when it has a usable backend;
otherwise ``$XDG_STATE_HOME/vaultfs/sso/<hash of url and user>.json`` (0600, in a 0700
directory), which is what a headless machine and a system unit use. The stored value is
the token as the authorization server gave it (refresh token, access token, expiry),
without the ID token, plus nothing else: which profile and client it belongs to is found
again by discovery.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

from vaultfs.bridge.commands.credentials import CredentialError

__all__ = ["SignInStore", "default_token_file"]

log = logging.getLogger(__name__)


def default_token_file(url: str, user: str) -> Path:
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    digest = hashlib.sha256(f"{url.rstrip('/')}\0{user}".encode()).hexdigest()[:16]
    return base / "vaultfs" / "sso" / f"{digest}.json"


def _service(url: str) -> str:
    return f"vaultfs-sso {url.rstrip('/')}"


def _keyring() -> Any | None:
    """The keyring module when a usable backend exists, else None."""
    try:
        import keyring
        from keyring.backends.fail import Keyring as NoKeyring

        if isinstance(keyring.get_keyring(), NoKeyring):
            return None
        return keyring
    # Backends fail in their own ways; every one of them means "no keyring here".
    except Exception as exc:
        log.debug("no keyring: %s", type(exc).__name__)
        return None


class SignInStore:
    """The tokens of ``user`` at ``url`` (a ``vaultfs.client.TokenStore``)."""

    def __init__(self, url: str, user: str, token_file: Path | None = None) -> None:
        self._url = url
        self._user = user
        self._explicit = token_file is not None
        self._file = token_file or default_token_file(url, user)

    @property
    def where(self) -> str:
        """For messages: where the tokens are (never what they are)."""
        if not self._explicit and self._from_keyring() is not None:
            return "the system keyring"
        return str(self._file)

    def load(self) -> dict[str, Any] | None:
        text = None if self._explicit else self._from_keyring()
        if text is None:
            text = self._read_file()
        if text is None:
            return None
        try:
            token = json.loads(text)
        except ValueError:
            log.warning("the stored sign-in of %s is unreadable; sign in again", self._user)
            return None
        return token if isinstance(token, dict) else None

    def save(self, token: dict[str, Any]) -> None:
        text = json.dumps({k: v for k, v in token.items() if k != "id_token"})
        if not self._explicit:
            keyring = _keyring()
            if keyring is not None:
                try:
                    keyring.set_password(_service(self._url), self._user, text)
                    self._remove_file()
                    return
                except Exception as exc:
                    log.debug("the keyring refused the sign-in: %s", type(exc).__name__)
        self._write_file(text)

    def delete(self) -> bool:
        """Forget the tokens; whether there were any."""
        found = self._remove_file()
        keyring = None if self._explicit else _keyring()
        if keyring is not None:
            try:
                if keyring.get_password(_service(self._url), self._user) is not None:
                    keyring.delete_password(_service(self._url), self._user)
                    found = True
            except Exception as exc:
                log.debug("the keyring could not forget the sign-in: %s", type(exc).__name__)
        return found

    # --- the two places ---------------------------------------------------------------

    def _from_keyring(self) -> str | None:
        keyring = _keyring()
        if keyring is None:
            return None
        try:
            text: str | None = keyring.get_password(_service(self._url), self._user)
        except Exception as exc:
            log.debug("no sign-in from the keyring: %s", type(exc).__name__)
            return None
        return text

    def _read_file(self) -> str | None:
        path = self._file
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            return None
        if mode & (stat.S_IRGRP | stat.S_IROTH | stat.S_IWGRP | stat.S_IWOTH):
            raise CredentialError(
                f"{path} is readable or writable by other users (mode "
                f"{stat.S_IMODE(mode):04o}); refusing to use it: chmod 600 {path}"
            )
        try:
            return path.read_text()
        except OSError as exc:
            raise CredentialError(f"cannot read the sign-in file {path}: {exc.strerror}") from None

    def _write_file(self, text: str) -> None:
        path = self._file
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        # Created 0600 (never readable by others, not even for an instant), then renamed
        # over the old one: a crash leaves either token, never half of one.
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def _remove_file(self) -> bool:
        try:
            self._file.unlink()
            return True
        except FileNotFoundError:
            return False
