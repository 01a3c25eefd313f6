"""``vaultfs demo``: a local demo vault, mounted, until Ctrl-C.

Owns the demo's choreography: start ``python -m vaultfs serve`` as a child process
(its data under ``~/.local/share/vaultfs/demo``, port 8817 or a free one), read the
demo admin's password (``VAULTFS_DEMO_PASSWORD`` or the server's 0600
``demo-credentials`` file), mount in the foreground, print what to try, and on
Ctrl-C/SIGTERM unmount and stop the server. Works without a terminal (CI).

The demo's data directory also gets an OAuth 2.0 / OIDC profile (``oauth.toml``, written
once, mode 0600) for the demo's single sign-on user, ``sso@vaultfs.demo``: it trusts the
demo identity provider on ``127.0.0.1:8818`` (``./run sso-provider``, the test suite's
provider, reads the introspection secret from this file). The admin's mount does not
need it: it signs in with a password as before.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import trio

from vaultfs import errors
from vaultfs.bridge.commands.control import unmount
from vaultfs.bridge.daemon.config import MountConfig, default_cache_dir
from vaultfs.bridge.daemon.mount import run_mount
from vaultfs.client import vault_answers

__all__ = ["DEMO_IDP_PORT", "DEMO_USER", "demo_oauth_profile", "read_demo_credentials", "run_demo"]

log = logging.getLogger(__name__)

DEMO_USER = "admin@vaultfs.demo"
DEFAULT_PORT = 8817
#: the demo identity provider's port (``./run sso-provider``)
DEMO_IDP_PORT = 8818
DEMO_SSO_USER = "sso@vaultfs.demo"
_SERVER_START_TIMEOUT = 60.0


def _data_dir() -> Path:
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "vaultfs" / "demo"


def _port() -> int:
    """8817 when it is free, else any free port."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", DEFAULT_PORT))
            return DEFAULT_PORT
        except OSError:
            pass
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def read_demo_credentials(data_dir: Path) -> tuple[str, str]:
    """(user, password) of the demo admin: ``VAULTFS_DEMO_PASSWORD``, else the server's
    ``demo-credentials`` file (one ``user<TAB>password`` line per demo user)."""
    env = os.environ.get("VAULTFS_DEMO_PASSWORD")
    if env:
        return DEMO_USER, env
    users: dict[str, str] = {}
    for line in (data_dir / "demo-credentials").read_text().splitlines():
        user, _, password = line.strip().partition("\t")
        if user and password:
            users[user] = password
    if not users:
        raise RuntimeError(f"no demo credentials in {data_dir / 'demo-credentials'}")
    if DEMO_USER in users:
        return DEMO_USER, users[DEMO_USER]
    return next(iter(users.items()))


def demo_oauth_profile(data_dir: Path) -> Path:
    """``DATA/oauth.toml`` with the demo's single sign-on profile, written when there is
    none (0600: it holds the vault's secret at the provider); its path."""
    path = data_dir / "oauth.toml"
    if path.exists():
        return path
    issuer = f"http://127.0.0.1:{DEMO_IDP_PORT}/o"
    text = f"""# The demo's single sign-on: {DEMO_SSO_USER} signs in through the demo identity
# provider (start it with `./run sso-provider`; see docs/user-guide.md).
[profiles.demo_idp]
label = "vaultfs demo identity provider"
description = "The test suite's OpenID provider, on this machine"
introspection_endpoint = "{issuer}/introspect/"
introspection_client_id = "vault"
introspection_client_secret = "{secrets.token_urlsafe(24)}"
issuer = "{issuer}"
authorization_endpoint = "{issuer}/authorize/"
token_endpoint = "{issuer}/token/"
revocation_endpoint = "{issuer}/revoke_token/"
device_authorization_endpoint = "{issuer}/device-authorization/"
user_claim = "username"
users = ["{DEMO_SSO_USER}"]
client_ids = {{ "vaultfs" = "vaultfs" }}
"""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return path


def _start_server(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    demo_oauth_profile(data_dir)
    log_path = data_dir.parent / "demo-server.log"
    with open(log_path, "ab") as log_file:
        # Its own session: Ctrl-C reaches the demo, which then stops the server in order.
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vaultfs",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--data",
                str(data_dir),
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def _wait_for_server(server: subprocess.Popen[bytes], url: str, data_dir: Path) -> None:
    deadline = time.monotonic() + _SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the demo vault exited ({server.returncode}); see its log")
        if vault_answers(url) and (
            os.environ.get("VAULTFS_DEMO_PASSWORD") or (data_dir / "demo-credentials").exists()
        ):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the demo vault did not answer on {url} within {_SERVER_START_TIMEOUT}s")


def _prepare_mountpoint(mountpoint: Path) -> None:
    try:
        mountpoint.mkdir(parents=True, exist_ok=True)
    except OSError:
        # A mount left behind by a killed demo ("transport endpoint is not connected").
        unmount(mountpoint)
        mountpoint.mkdir(parents=True, exist_ok=True)


def _instructions(mountpoint: Path, url: str, user: str, credentials: Path) -> str:
    m = str(mountpoint)
    return f"""
vaultfs demo: the local vault {url} is mounted at {m} as {user}

Its users are admin@vaultfs.demo, editor@vaultfs.demo and viewer@vaultfs.demo; their
password (for other clients and mounts) is in {credentials}
(mode 0600, one "user<TAB>password" line each). sso@vaultfs.demo signs in through
single sign-on instead: see "Single sign-on in the demo" in docs/user-guide.md.

Try, in another terminal:
  ls -l {m}                          the document types
  ls -lR {m} | head -50              every document, version and rendition
  grep -ril "vault" {m}              search the documents' content
  getfattr -d {m}/*/*/               a document's fields as extended attributes
  vim {m}/<Type>/<Document>/<file>   edit a document: saving checks in a new draft
  cat {m}/.vaultfs/status            API calls made, cache use, pending uploads

Press Ctrl-C to unmount and stop the demo vault.
"""


def run_demo(mountpoint: Path) -> int:
    data_dir = _data_dir()
    port = _port()
    url = f"http://127.0.0.1:{port}"
    mountpoint = mountpoint.expanduser().absolute()
    server = _start_server(data_dir, port)
    try:
        _wait_for_server(server, url, data_dir)
        user, password = read_demo_credentials(data_dir)
        _prepare_mountpoint(mountpoint)
        config = MountConfig(
            url=url,
            user=user,
            password=password,
            mountpoint=mountpoint,
            cache_dir=default_cache_dir(url, user),
        )

        # The index's progress lines (a big vault's first mount takes a while).
        progress = logging.StreamHandler(sys.stderr)
        progress.setFormatter(logging.Formatter("vaultfs demo: %(message)s"))
        index_log = logging.getLogger("vaultfs.bridge.tree.index")
        index_log.addHandler(progress)
        index_log.setLevel(logging.INFO)

        def ready() -> None:
            credentials = data_dir / "demo-credentials"
            print(_instructions(mountpoint, url, user, credentials), flush=True)

        trio.run(run_mount, config, ready)
        print("vaultfs demo: unmounted; stopping the demo vault", flush=True)
        return 0
    except (errors.VaultError, OSError, RuntimeError) as exc:
        print(f"vaultfs demo: {exc}", file=sys.stderr)
        return 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
