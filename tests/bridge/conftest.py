"""Fixtures of the bridge tests: a real ``vaultfs mount --foreground`` of a real server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD
from tests.vaultproc import VaultProcess, wait_until

__all__ = ["MountProcess"]


def _can_mount() -> bool:
    return os.path.exists("/dev/fuse") and shutil.which("fusermount3") is not None


class MountProcess:
    """``vaultfs mount --foreground`` as a child process (password via the environment)."""

    def __init__(self, url: str, root: Path, *, options: str = "poll_interval=1") -> None:
        self.url = url
        self.mountpoint = root / "mnt"
        self.cache_dir = root / "cache"
        self.log_path = root / "mount.log"
        self.options = options
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> MountProcess:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vaultfs",
                "mount",
                self.url,
                str(self.mountpoint),
                "--user",
                ADMIN,
                "--foreground",
                "--log-level",
                "DEBUG",
                "--log-file",
                str(self.log_path),
                "-o",
                f"cache_dir={self.cache_dir},{self.options}",
            ],
            env=dict(os.environ, VAULTFS_PASSWORD=DEMO_PASSWORD),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        wait_until(self._answers, timeout=timeout, what=f"mount at {self.mountpoint}")
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"mount exited with {self.proc.returncode}: {self.log()}")
        return os.path.ismount(self.mountpoint) and (self.mountpoint / ".vaultfs").is_dir()

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads((self.mountpoint / ".vaultfs" / "status").read_text())
        return result

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        # A killed daemon leaves a mount that ismount() cannot stat: unmount regardless.
        subprocess.run(
            ["fusermount3", "-u", "-z", str(self.mountpoint)], check=False, capture_output=True
        )
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _mount(url: str, root: Path) -> Iterator[MountProcess]:
    if not _can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    mount = MountProcess(url, root)
    try:
        yield mount.start()
    finally:
        mount.stop()


@pytest.fixture(scope="module")
def shared_mount(
    vault_server: VaultProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MountProcess]:
    """A mount of the session's demo vault, for tests that only read."""
    yield from _mount(vault_server.url, tmp_path_factory.mktemp("mount"))


@pytest.fixture
def own_mount(fresh_vault: VaultProcess, tmp_path: Path) -> Iterator[MountProcess]:
    """A mount of a vault of this test's own, for tests that change documents."""
    yield from _mount(fresh_vault.url, tmp_path)
