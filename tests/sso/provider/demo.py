"""``./run sso-provider``: the demo's identity provider, for ``sso@vaultfs.demo``.

Serves this test provider on 127.0.0.1:8818 (the port ``vaultfs demo`` wrote into the
demo vault's ``oauth.toml``), with the vault's introspection secret read from that file
and one user, ``sso@vaultfs.demo``, whose password at the provider is generated once and
kept in ``~/.local/share/vaultfs/demo-idp/sso-password`` (mode 0600).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import tomllib
from pathlib import Path

from tests.sso.provider.__main__ import main

PORT = 8818
USER = "sso@vaultfs.demo"


def _share() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "vaultfs"


def _private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def run() -> int:
    oauth = _share() / "demo" / "oauth.toml"
    try:
        profile = tomllib.loads(oauth.read_text())["profiles"]["demo_idp"]
    except (OSError, KeyError) as exc:
        print(f"no demo profile in {oauth} ({exc}): run `./run demo` once first", file=sys.stderr)
        return 1
    directory = _share() / "demo-idp"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    password_file = directory / "sso-password"
    if not password_file.exists():
        _private(password_file, secrets.token_urlsafe(12) + "\n")
    password = password_file.read_text().strip()
    config = {
        "port": PORT,
        "access_token_seconds": 600,
        "users": {USER: password},
        "clients": [
            {"client_id": "vaultfs", "redirect_uris": ["http://127.0.0.1/callback"]},
            {"client_id": profile["introspection_client_id"],
             "secret": profile["introspection_client_secret"]},
        ],
    }  # fmt: skip
    _private(directory / "provider.json", json.dumps(config))
    print(
        f"The demo identity provider: http://127.0.0.1:{PORT}/o\n"
        f"Sign in there as {USER}; the password is in {password_file} (mode 0600).\n"
        f"Then: vaultfs mount http://127.0.0.1:8817 ~/vaultfs-sso --user {USER}\n"
        "Press Ctrl-C to stop it.",
        flush=True,
    )
    return main([str(directory)])


if __name__ == "__main__":
    sys.exit(run())
