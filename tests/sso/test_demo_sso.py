"""The demo's single sign-on user: ``vaultfs demo`` gives the demo vault an OAuth profile
for ``sso@vaultfs.demo`` (who has no usable password), and only for them."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx

from tests.server.helpers import API
from tests.sso.conftest import SSO_USER
from vaultfs.bridge.commands.demo import DEMO_IDP_PORT, demo_oauth_profile
from vaultfs.testing.vault_process import ADMIN, DEMO_PASSWORD, EDITOR, VaultProcess


def test_the_demo_vault_signs_in_its_sso_user_through_the_demo_provider(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    path = demo_oauth_profile(data)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    written = path.read_text()
    assert demo_oauth_profile(data) == path and path.read_text() == written  # kept
    with VaultProcess(data) as vault:
        answer = httpx.post(vault.url + "/auth/discovery", data={"username": SSO_USER}).json()
        assert answer["data"]["auth_type"] == "sso"
        [profile] = answer["data"]["auth_profiles"]
        assert profile["id"] == "demo_idp"
        issuer = f"http://127.0.0.1:{DEMO_IDP_PORT}/o"
        metadata = profile["as_metadata"]
        assert metadata["issuer"] == issuer
        assert metadata["device_authorization_endpoint"] == issuer + "/device-authorization/"
        assert "introspection_client_secret" not in str(answer)
        for user in (ADMIN, EDITOR):
            answer = httpx.post(vault.url + "/auth/discovery", data={"username": user}).json()
            assert answer["data"] == {"auth_type": "password"}
        # The demo password (every demo user's) is not the SSO user's.
        refused = httpx.post(
            vault.url + API + "/auth",
            data={"username": SSO_USER, "password": DEMO_PASSWORD},
        ).json()
        assert refused["responseStatus"] == "FAILURE"
        assert refused["errors"][0]["type"] == "USERNAME_OR_PASSWORD_INCORRECT"
