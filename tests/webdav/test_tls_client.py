"""A real client over ``https://``: davfs2 mounting a front whose certificate a private
CA made here signed, the CA trusted by davfs2 only (its ``trust_ca_cert``, as
docs/user-guide.md says): ``cp`` over a document's source file is one version with
the exact bytes; without the CA davfs2 refuses the front's certificate. (cadaver has
no way to trust a CA of its own: its neon, on GnuTLS, does not read ``SSL_CERT_FILE``.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.webdav.test_davfs2 import davfs
from tests.webdav.test_webdav_front import latest_bytes, record, version_count
from vaultfs.testing.vault_process import ADMIN, VaultProcess
from vaultfs.testing.webdav_process import WebdavProcess

pytestmark = pytest.mark.skipif(
    shutil.which("mount.davfs") is None
    or shutil.which("openssl") is None
    or os.geteuid() != 0
    or not Path("/dev/fuse").exists(),
    reason="needs davfs2, openssl, root and /dev/fuse",
)


def openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def private_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A CA of its own and a certificate for 127.0.0.1 it signed: (CA, cert, key)."""
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, request = folder / "front.pem", folder / "front.key", folder / "front.csr"
    openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        "-subj", "/CN=vaultfs test CA", "-keyout", ca_key, "-out", ca,
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", key, "-out", request,
    )  # fmt: skip
    extensions = folder / "front.ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl(
        "x509", "-req", "-in", request, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
        "-days", "1", "-extfile", extensions, "-out", cert,
    )  # fmt: skip
    key.chmod(0o600)
    return ca, cert, key


def test_davfs2_over_https_with_a_private_ca(
    module_vault: VaultProcess, module_api: httpx.Client, tmp_path: Path
) -> None:
    ca, cert, key = private_ca(tmp_path)
    content = os.urandom(150_000)
    local = tmp_path / "local.txt"
    local.write_bytes(content)
    front = WebdavProcess(module_vault.url, tmp_path, tls=(cert, key), args=["--user", ADMIN])
    with front:
        assert front.address.startswith("https://127.0.0.1:")
        versions = version_count(module_api, 2)
        # The CA not trusted: davfs2 refuses the certificate (it would ask; nobody
        # answers) and mounts nothing.
        untrusted, trusted = tmp_path / "untrusted", tmp_path / "trusted"
        untrusted.mkdir()
        trusted.mkdir()
        with pytest.raises(AssertionError, match="certificate"), davfs(front, untrusted):
            pass
        # davfs2 reads it as its own user: a copy where that user can (the test's
        # directory is private to root).
        public = Path(tempfile.mkdtemp(prefix="vaultfs-ca-"))
        try:
            public.chmod(0o755)
            readable = public / "ca.pem"
            shutil.copyfile(ca, readable)
            readable.chmod(0o644)
            with davfs(front, trusted, f"trust_ca_cert {readable}\n") as mnt:
                folder = mnt / "General" / "Meeting Notes"
                assert "Meeting_Notes.txt" in os.listdir(folder)
                subprocess.run(["cp", str(local), str(folder / "Meeting_Notes.txt")], check=True)
        finally:
            shutil.rmtree(public, ignore_errors=True)
    assert version_count(module_api, 2) == versions + 1
    assert latest_bytes(module_api, 2) == content
    assert record(module_api, 2)["document"]["locked__v"] is False
