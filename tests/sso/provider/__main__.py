"""``python -m tests.sso.provider DIR [revoke USER]``: serve the provider, or revoke a user's
sign-ins (every refresh token, as an administrator ending a user's sessions does).

``DIR/provider.json``::

    {"port": 8818, "access_token_seconds": 300,
     "users": {"sso@vaultfs.demo": "password"},
     "clients": [
        {"client_id": "vaultfs", "redirect_uris": ["http://127.0.0.1/callback"]},
        {"client_id": "vault", "secret": "..."}]}

A client with a secret is confidential (it may introspect tokens: the vault); one
without is a public client of the authorization code flow, the device grant and
refresh (vaultfs). The first start makes the signing key, the database, the users and
the clients; later starts bring users and clients up to date.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path


def _prepare(directory: Path) -> None:
    """The key files the settings read, made once (mode 0600)."""
    secret = directory / "django-secret"
    if not secret.exists():
        _write_private(secret, secrets.token_urlsafe(48))
    key = directory / "oidc-key.pem"
    if not key.exists():
        from jwcrypto import jwk

        pem = jwk.JWK.generate(kty="RSA", size=2048).export_to_pem(private_key=True, password=None)
        _write_private(key, pem.decode())


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def _setup(config: dict) -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from oauth2_provider.models import get_application_model

    call_command("migrate", verbosity=0)
    users = get_user_model()
    for name, password in config.get("users", {}).items():
        user, _ = users.objects.get_or_create(username=name, defaults={"email": name})
        user.set_password(password)
        user.save()
    applications = get_application_model()
    for client in config.get("clients", []):
        confidential = "secret" in client
        application, _ = applications.objects.get_or_create(client_id=client["client_id"])
        application.name = client["client_id"]
        application.client_type = (
            applications.CLIENT_CONFIDENTIAL if confidential else applications.CLIENT_PUBLIC
        )
        application.authorization_grant_type = (
            applications.GRANT_CLIENT_CREDENTIALS
            if confidential
            else applications.GRANT_AUTHORIZATION_CODE
        )
        application.client_secret = client.get("secret", "")
        application.redirect_uris = " ".join(client.get("redirect_uris", []))
        application.skip_authorization = False
        application.algorithm = applications.RS256_ALGORITHM
        application.save()


def _revoke(username: str) -> int:
    from oauth2_provider.models import get_refresh_token_model

    tokens = get_refresh_token_model().objects.filter(user__username=username, revoked__isnull=True)
    count = 0
    for token in tokens:
        token.revoke()
        count += 1
    print(f"revoked {count} refresh token(s) of {username}", flush=True)
    return 0


def _serve(port: int) -> int:
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from django.core.wsgi import get_wsgi_application

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class Quiet(WSGIRequestHandler):
        # Request lines carry codes; they are the business of the test, not of its log.
        def log_message(self, format: str, *args: object) -> None:
            pass

    with make_server("127.0.0.1", port, get_wsgi_application(), Server, Quiet) as httpd:
        print(f"serving on http://127.0.0.1:{port}", flush=True)
        httpd.serve_forever()
    return 0


def main(argv: list[str]) -> int:
    directory = Path(argv[0]).resolve()
    os.environ["VAULTFS_IDP_DIR"] = str(directory)
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.sso.provider.settings"
    _prepare(directory)
    import django

    django.setup()
    if argv[1:2] == ["revoke"]:
        return _revoke(argv[2])
    config = json.loads((directory / "provider.json").read_text())
    _setup(config)
    return _serve(int(config["port"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
