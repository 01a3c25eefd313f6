"""HTTPS: ``vaultfs serve --tls-cert --tls-key`` with a self-signed certificate."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD
from tests.server.helpers import API, assert_ok
from vaultfs.testing.vault_process import VaultProcess

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


class TlsVaultProcess(VaultProcess):
    def __init__(self, data_dir: Path, cert: Path, key: Path) -> None:
        super().__init__(data_dir, extra_args=["--tls-cert", str(cert), "--tls-key", str(key)])
        self.cert = cert

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"server exited with {self.proc.returncode}; log: {self.log()}")
        try:
            return httpx.get(self.url + "/api/", verify=self.context(), timeout=1.0).is_success
        except httpx.HTTPError:
            return False

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert))


def _self_signed(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "1", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )  # fmt: skip
    return cert, key


def test_https_with_self_signed_certificate(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    with TlsVaultProcess(tmp_path / "data", cert, key) as server:
        context = server.context()
        values = assert_ok(httpx.get(server.url + "/api/", verify=context))["values"]
        assert values["v25.1"] == server.url + "/api/v25.1"
        login = httpx.post(
            server.url + API + "/auth",
            data={"username": ADMIN, "password": DEMO_PASSWORD},
            verify=context,
        )
        body = assert_ok(login)
        assert all(v["url"].startswith("https://") for v in body["vaultIds"])
        with httpx.Client(
            base_url=server.url + API, headers={"Authorization": body["sessionId"]}, verify=context
        ) as client:
            index = assert_ok(client.get("/metadata/objects"))["values"]
            assert index["documents"].startswith(server.url)
        # The certificate is checked: an unknown one is refused by a verifying client.
        with pytest.raises(httpx.ConnectError):
            httpx.get(server.url + "/api/")
        # Plain HTTP on the TLS port gets no API answer.
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{server.port}/api/", timeout=5).raise_for_status()


def test_cert_without_key_is_refused(tmp_path: Path) -> None:
    cert, _ = _self_signed(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "vaultfs", "serve", "--tls-cert", cert, "--data", tmp_path],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "--tls-key" in done.stderr
