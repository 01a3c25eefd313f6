"""Where a sign-in is kept (a 0600 file, refused when others may read it; the keyring
when there is one) and a profile's ``[oauth]`` table."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from vaultfs.bridge.commands.credentials import CredentialError
from vaultfs.bridge.commands.signin import SsoSettings
from vaultfs.bridge.commands.tokens import SignInStore, default_token_file
from vaultfs.profiles import ProfileError, load_profile

URL = "http://127.0.0.1:8817"
USER = "sso@vaultfs.demo"
TOKEN = {"access_token": "a" * 30, "refresh_token": "r" * 30, "expires_at": 1, "id_token": "x"}


class MemoryKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.kept.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.kept[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        del self.kept[(service, username)]


@pytest.fixture
def no_keyring(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    from keyring.backends.fail import Keyring as NoKeyring

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    previous = keyring.get_keyring()
    keyring.set_keyring(NoKeyring())
    yield tmp_path / "state"
    keyring.set_keyring(previous)


def test_without_a_keyring_the_sign_in_is_a_private_file(no_keyring: Path) -> None:
    store = SignInStore(URL, USER)
    assert store.load() is None
    store.save(TOKEN)
    path = default_token_file(URL, USER)
    assert path.is_relative_to(no_keyring)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert store.load() == {k: v for k, v in TOKEN.items() if k != "id_token"}
    assert store.where == str(path)
    path.chmod(0o644)
    with pytest.raises(CredentialError, match="chmod 600"):
        store.load()
    assert store.delete() and not path.exists()
    assert not store.delete()


def test_a_named_token_file_wins(no_keyring: Path, tmp_path: Path) -> None:
    named = tmp_path / "work.tokens"
    SignInStore(URL, USER, named).save(TOKEN)
    assert named.exists() and not default_token_file(URL, USER).exists()


def test_with_a_keyring_the_sign_in_goes_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    memory = MemoryKeyring()
    previous = keyring.get_keyring()
    keyring.set_keyring(memory)
    try:
        store = SignInStore(URL, USER)
        store.save(TOKEN)
        assert list(memory.kept) == [(f"vaultfs-sso {URL}", USER)]
        assert not default_token_file(URL, USER).exists()
        assert store.load() is not None and store.where == "the system keyring"
        assert store.delete() and memory.kept == {}
    finally:
        keyring.set_keyring(previous)


def test_a_profile_takes_an_oauth_table(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        """
[profiles.work]
url = "https://vault.example.com"
user = "ann@example.com"
mountpoint = "~/vault"

[profiles.work.oauth]
client_id = "vaultfs-corp"
scopes = "openid offline_access"
profile = "corp_idp"
token_file = "~/.config/vaultfs/work.tokens"
"""
    )
    settings = SsoSettings.from_table(load_profile("work", path).oauth)
    assert settings.client_id == "vaultfs-corp" and settings.profile == "corp_idp"
    assert settings.scopes == "openid offline_access"
    assert settings.token_file == Path.home() / ".config/vaultfs/work.tokens"
    path.write_text(path.read_text() + 'client_secret = "no"\n')
    with pytest.raises(ProfileError, match="client_secret is not one of"):
        load_profile("work", path)
