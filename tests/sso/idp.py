"""The test OpenID provider run as a real process, and a person using its pages.

``Provider`` starts ``python -m tests.sso.provider`` (django-oauth-toolkit) on
127.0.0.1 with a free port and its own directory, waits (polling with a deadline) until
its OpenID configuration answers, and stops it by PID. ``approve_device`` is what a
person does with the code a device shows: sign in on the provider's page, type the
code, accept; ``approve_authorization`` what a person does in the browser vaultfs
opened: sign in, authorize. Plain HTTP requests through the provider's own forms.
"""

from __future__ import annotations

import html
import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import httpx

from vaultfs.testing.vault_process import (
    START_TIMEOUT,
    answers_http,
    end_process,
    free_port,
    wait_until,
)

__all__ = ["CLIENT_ID", "Provider", "approve_authorization", "approve_device", "sign_in"]

#: vaultfs's client at the provider (public: no secret)
CLIENT_ID = "vaultfs"
#: the vault's own client at the provider, for introspection
VAULT_CLIENT_ID = "vault"
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class Provider:
    def __init__(
        self, directory: Path, users: dict[str, str], *, access_token_seconds: int = 300
    ) -> None:
        self.directory = directory
        self.port = free_port()
        self.users = users
        self.vault_secret = secrets.token_urlsafe(24)
        self.access_token_seconds = access_token_seconds
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = directory.parent / f"{directory.name}-provider.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def issuer(self) -> str:
        return f"{self.url}/o"

    def oauth_toml(self, profile: str, users: list[str], client_map: bool = True) -> str:
        """The vault's ``oauth.toml`` section of a profile that introspects here."""
        mapping = f'client_ids = {{ "{CLIENT_ID}" = "{CLIENT_ID}" }}\n' if client_map else ""
        return (
            f"[profiles.{profile}]\n"
            f'label = "Test provider"\n'
            f'introspection_endpoint = "{self.issuer}/introspect/"\n'
            f'introspection_client_id = "{VAULT_CLIENT_ID}"\n'
            f'introspection_client_secret = "{self.vault_secret}"\n'
            f'issuer = "{self.issuer}"\n'
            f'authorization_endpoint = "{self.issuer}/authorize/"\n'
            f'token_endpoint = "{self.issuer}/token/"\n'
            f'revocation_endpoint = "{self.issuer}/revoke_token/"\n'
            # django-oauth-toolkit's metadata document does not name it
            f'device_authorization_endpoint = "{self.issuer}/device-authorization/"\n'
            f'user_claim = "username"\n'
            f"users = {json.dumps(users)}\n"
            f"{mapping}"
        )

    def start(self, timeout: float = START_TIMEOUT) -> Provider:
        self.directory.mkdir(parents=True, exist_ok=True)
        config = {
            "port": self.port,
            "access_token_seconds": self.access_token_seconds,
            "users": self.users,
            "clients": [
                {"client_id": CLIENT_ID, "redirect_uris": ["http://127.0.0.1/callback"]},
                {"client_id": VAULT_CLIENT_ID, "secret": self.vault_secret},
            ],
        }
        path = self.directory / "provider.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(config, out)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.sso.provider", str(self.directory)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            wait_until(self._answers, timeout=timeout, what=f"OpenID provider on {self.url}")
        except BaseException:
            self.stop()
            raise
        return self

    def _answers(self) -> bool:
        url = f"{self.issuer}/.well-known/openid-configuration"
        return answers_http(self.proc, url, f"the provider (log: {self.log()})")

    def revoke(self, user: str) -> str:
        """Revoke every sign-in of ``user`` (as the provider's administrator would)."""
        done = subprocess.run(
            [sys.executable, "-m", "tests.sso.provider", str(self.directory), "revoke", user],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        end_process(proc)

    def __enter__(self) -> Provider:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _csrf(page: httpx.Response) -> str:
    found = _CSRF.search(page.text)
    assert found, f"no form on {page.url} ({page.status_code})"
    return found.group(1)


def sign_in(browser: httpx.Client, start: str, user: str, password: str) -> httpx.Response:
    """Open ``start``; when the provider asks to sign in first, do so. Returns the page
    the provider shows after (redirects followed)."""
    page = browser.get(start)
    if "/login/" in str(page.url):
        page = browser.post(
            str(page.url),
            data={
                "csrfmiddlewaretoken": _csrf(page),
                "username": user,
                "password": password,
                "next": page.url.params.get("next", ""),
            },
        )
    return page


def approve_device(verification_uri: str, user_code: str, user: str, password: str) -> None:
    """Sign in at the provider, enter the code, accept: as a person in a browser does."""
    with httpx.Client(follow_redirects=True, timeout=30) as browser:
        page = sign_in(browser, verification_uri, user, password)
        assert "/login/" not in str(page.url), "the provider refused the sign-in"
        page = browser.post(
            str(page.url),
            data={"csrfmiddlewaretoken": _csrf(page), "user_code": user_code},
        )
        assert "device-confirm" in str(page.url), f"the code was refused: {page.text[:500]}"
        page = browser.post(
            str(page.url), data={"csrfmiddlewaretoken": _csrf(page), "action": "accept"}
        )
        assert page.status_code == 200 and "device-grant-status" in str(page.url), page.text[:500]


_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


def approve_authorization(authorization_url: str, user: str, password: str) -> str:
    """Open the authorization URL, sign in, press "Authorize": the provider then sends
    the browser to the client's loopback redirect. Returns the page found there."""
    with httpx.Client(follow_redirects=True, timeout=30) as browser:
        page = sign_in(browser, authorization_url, user, password)
        assert "authorizationForm" in page.text, page.text[:500]
        form = {name: html.unescape(value) for name, value in _HIDDEN.findall(page.text)}
        form["allow"] = "Authorize"
        done = browser.post(str(page.url), data=form)
        assert done.status_code == 200, done.text[:500]
        return done.text
