"""Password sources: a private file, the environment, the keyring (silently skipped
when there is none), in that order; a file others may read is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends.fail import Keyring as NoKeyring

from vaultfs.bridge.commands.credentials import (
    CredentialError,
    find_password,
    keyring_password,
    read_password_file,
    store_in_keyring,
)

URL = "http://vault.example:8817"


class MemoryKeyring(KeyringBackend):
    """A keyring backend in memory (a unit test's stand-in for the desktop one)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.stored: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.stored.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.stored[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.stored.pop((service, username), None)


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("VAULTFS_PASSWORD", raising=False)
    saved = keyring.get_keyring()
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    try:
        yield memory
    finally:
        keyring.set_keyring(saved)


def private_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "password"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_private_file_gives_its_first_line(tmp_path: Path) -> None:
    assert read_password_file(private_file(tmp_path, "s3cret\nignored\n")) == "s3cret"


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620])
def test_a_file_others_can_read_or_write_is_refused(tmp_path: Path, mode: int) -> None:
    with pytest.raises(CredentialError, match="chmod 600"):
        read_password_file(private_file(tmp_path, "s3cret", mode))


def test_the_keyring_round_trip_and_order(
    backend: MemoryKeyring, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_in_keyring(URL, "ed", "from-keyring")
    assert backend.stored == {(f"vaultfs {URL}", "ed"): "from-keyring"}
    assert find_password(URL + "/", "ed", None) == "from-keyring"
    monkeypatch.setenv("VAULTFS_PASSWORD", "from-env")
    assert find_password(URL, "ed", None) == "from-env"
    assert find_password(URL, "ed", private_file(tmp_path, "from-file")) == "from-file"


def test_no_keyring_falls_through_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VAULTFS_PASSWORD", raising=False)
    saved = keyring.get_keyring()
    keyring.set_keyring(NoKeyring())
    try:
        assert keyring_password(URL, "ed") is None
        with pytest.raises(CredentialError, match="no system keyring"):
            store_in_keyring(URL, "ed", "x")
        with pytest.raises(CredentialError, match="no password"):
            find_password(URL, "ed", None)  # stdin is no terminal under pytest
    finally:
        keyring.set_keyring(saved)
