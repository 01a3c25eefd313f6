"""OAuth 2.0 / OpenID Connect: discovery of SSO users and the token-for-session exchange,
against a small RFC 7662 introspection endpoint run by the test."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest

from tests.conftest import ADMIN, EDITOR, VIEWER
from tests.server.helpers import API, assert_error, assert_ok
from vaultfs.testing.vault_process import VaultProcess

#: access token -> introspection answer
TOKENS = {
    "admin-token": {"active": True, "sub": "admin-sub", "email": ADMIN, "client_id": "app-1"},
    "viewer-token": {"active": True, "email": VIEWER},
    "editor-token": {"active": True, "email": EDITOR},
    "expired-token": {"active": True, "email": ADMIN, "exp": 1},
    "ghost-token": {"active": True, "email": "ghost@vaultfs.demo"},
}


class Introspection(BaseHTTPRequestHandler):
    seen: list[dict[str, list[str]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        form = parse_qs(self.rfile.read(length).decode())
        form["authorization"] = [self.headers.get("Authorization", "")]
        Introspection.seen.append(form)
        answer = TOKENS.get(form.get("token", [""])[0], {"active": False})
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def introspection() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Introspection)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/introspect"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def sso_vault(introspection: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("sso") / "data"
    data.mkdir()
    config = data / "oauth.toml"
    config.write_text(
        f"""
[profiles.corp]
label = "Corporate IdP"
description = "Sign in with the corporate account"
introspection_endpoint = "{introspection}"
introspection_client_id = "vault"
introspection_client_secret = "s3cret"
issuer = "https://idp.example"
authorization_endpoint = "https://idp.example/authorize"
token_endpoint = "https://idp.example/token"
response_types_supported = ["code"]
user_claim = "email"
users = ["{ADMIN}", "{VIEWER}", "ghost@vaultfs.demo"]
client_ids = {{ "vaultfs-app" = "as-client-42" }}

[profiles.down]
label = "Unreachable"
introspection_endpoint = "http://127.0.0.1:9/introspect"
users = ["{ADMIN}"]
"""
    )
    config.chmod(0o600)
    with VaultProcess(data) as server:
        yield server.url


def _exchange(url: str, token: str | None, profile: str = "corp", **form: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(f"{url}/auth/oauth/session/{profile}", headers=headers, data=form)


def test_discovery_names_the_profiles_of_sso_users(sso_vault: str) -> None:
    body = assert_ok(
        httpx.post(
            sso_vault + "/auth/discovery", data={"username": ADMIN, "client_id": "vaultfs-app"}
        )
    )
    assert body["data"]["auth_type"] == "sso"
    profiles = {p["id"]: p for p in body["data"]["auth_profiles"]}
    assert set(profiles) == {"corp", "down"}
    corp = profiles["corp"]
    assert corp["label"] == "Corporate IdP"
    assert corp["vault_session_endpoint"] == sso_vault + "/auth/oauth/session/corp"
    assert corp["use_adal"] is False
    assert corp["as_client_id"] == "as-client-42"
    metadata = corp["as_metadata"]
    assert metadata["issuer"] == "https://idp.example"
    assert metadata["response_types_supported"] == ["code"]
    assert metadata["introspection_endpoint"].endswith("/introspect")
    # No client_id mapping asked for: no as_client_id.
    plain = assert_ok(httpx.post(sso_vault + API + "/auth/discovery", params={"username": ADMIN}))
    assert all("as_client_id" not in p for p in plain["data"]["auth_profiles"])
    # Users without an SSO profile (and unknown users) sign in with a password.
    for user in (EDITOR, "nobody@example.com"):
        body = assert_ok(httpx.post(sso_vault + "/auth/discovery", data={"username": user}))
        assert body["data"] == {"auth_type": "password"}


def test_token_exchange(sso_vault: str) -> None:
    Introspection.seen.clear()
    body = assert_ok(_exchange(sso_vault, "admin-token", client_id="app-1"))
    assert Introspection.seen[-1]["token"] == ["admin-token"]
    assert Introspection.seen[-1]["client_id"] == ["app-1"]
    # The vault authenticates itself at the introspection endpoint when configured.
    basic = base64.b64encode(b"vault:s3cret").decode()
    assert Introspection.seen[-1]["authorization"] == [f"Basic {basic}"]
    session = body["sessionId"]
    assert body["vaultId"] in [v["id"] for v in body["vaultIds"]]
    assert_ok(httpx.get(sso_vault + API + "/limits", headers={"Authorization": session}))
    # vaultDNS picks the vault; also under the versioned path.
    clinical = assert_ok(
        httpx.post(
            sso_vault + API + "/auth/oauth/session/corp",
            headers={"Authorization": "Bearer admin-token"},
            data={"vaultDNS": "clinical.localhost"},
        )
    )
    names = {v["id"]: v["name"] for v in clinical["vaultIds"]}
    assert names[clinical["vaultId"]] == "vaultfs Clinical Vault"


def test_refused_tokens(sso_vault: str) -> None:
    incorrect = "USERNAME_OR_PASSWORD_INCORRECT"
    assert_error(_exchange(sso_vault, "unknown-token"), incorrect, 401)
    assert_error(_exchange(sso_vault, "expired-token"), incorrect, 401)
    # Issued to another client than the one named.
    assert_error(_exchange(sso_vault, "admin-token", client_id="other-app"), incorrect, 401)
    # A valid token for a name that is no vault user.
    assert_error(_exchange(sso_vault, "ghost-token"), incorrect, 401)
    assert_error(_exchange(sso_vault, None), "PARAMETER_REQUIRED", 400)
    assert_error(_exchange(sso_vault, "admin-token", profile="nope"), "INVALID_DATA", 400)
    # The authorization server cannot be reached: a system-level error.
    down = _exchange(sso_vault, "admin-token", profile="down")
    assert down.status_code == 500
    assert down.json()["responseStatus"] == "EXCEPTION"
    # The user of a valid token must use the profile (the editor's policy has none).
    assert_error(_exchange(sso_vault, "editor-token"), incorrect, 401, mentions="policy")
    viewer = assert_ok(_exchange(sso_vault, "viewer-token"))
    assert viewer["userId"] != assert_ok(_exchange(sso_vault, "admin-token"))["userId"]
    # A locked-out account gets no session through a token either.
    for _ in range(5):
        httpx.post(sso_vault + API + "/auth", data={"username": VIEWER, "password": "wrong"})
    assert_error(_exchange(sso_vault, "viewer-token"), "USER_LOCKED_OUT", 403)


def test_profiles_file_is_optional(vault_server: VaultProcess) -> None:
    r = httpx.post(
        vault_server.url + "/auth/oauth/session/corp", headers={"Authorization": "Bearer x"}
    )
    assert_error(r, "INVALID_DATA", 400, mentions="corp")


def test_unreadable_profile_needs_endpoint(tmp_path: Path) -> None:
    from vaultfs.server.oauth import load_profiles

    path = tmp_path / "oauth.toml"
    path.write_text('[profiles.bad]\nlabel = "No endpoint"\n')
    with pytest.raises(ValueError, match="introspection_endpoint"):
        load_profiles(path)
    assert load_profiles(tmp_path / "missing.toml") == {}
