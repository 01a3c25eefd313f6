"""The demo vault's generated password is kept in a 0600 file and never printed."""

from __future__ import annotations

import stat
from pathlib import Path

from vaultfs.testing.vault_process import VaultProcess


def test_the_generated_password_is_in_a_private_file_and_never_in_the_log(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    # An empty VAULTFS_DEMO_PASSWORD: the server generates one, as for a first user.
    with VaultProcess(data, env={"VAULTFS_DEMO_PASSWORD": ""}) as server:
        credentials = data / "demo-credentials"
        assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
        lines = credentials.read_text().splitlines()
        users = [line.split("\t")[0] for line in lines]
        password = lines[0].split("\t")[1]
        assert users == ["admin@vaultfs.demo", "editor@vaultfs.demo", "viewer@vaultfs.demo"]
        log = server.log_path.read_text()
        assert str(credentials) in log and "admin@vaultfs.demo" in log
        assert password not in log
