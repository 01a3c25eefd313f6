"""Fixtures of the operations tests: the ``vaultfs`` command run as users run it.

``run_vaultfs`` runs one ``python -m vaultfs`` command. ``Daemon`` is a daemonised
``vaultfs mount`` of a real server: it records the daemon's pid as soon as the mount
is up and, in ``stop()``, unmounts lazily and ends that pid, whatever the test did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD, login
from vaultfs.testing.mount_process import can_mount, stop_daemon
from vaultfs.testing.vault_process import VaultProcess

__all__ = ["Daemon", "documents", "latest_file", "needs_mount", "run_vaultfs"]

needs_mount = pytest.mark.skipif(not can_mount(), reason="needs /dev/fuse and fusermount3")


def run_vaultfs(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vaultfs", *args],
        env=dict(os.environ, **(env or {})),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Daemon:
    """A daemonised mount of ``url`` at ``root/mnt`` (cache under ``root/cache``)."""

    def __init__(self, url: str, root: Path, options: str = "") -> None:
        self.url = url
        self.mountpoint = root / "mnt"
        self.cache_dir = root / "cache"
        self.options = f"cache_dir={self.cache_dir}" + (f",{options}" if options else "")
        self.pid: int | None = None

    def start(self) -> Daemon:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        result = run_vaultfs(
            "mount", self.url, str(self.mountpoint), "--user", ADMIN, "-o", self.options,
            env={"VAULTFS_PASSWORD": DEMO_PASSWORD},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        self.adopt()
        return self

    def adopt(self) -> None:
        """Remember the pid of whatever daemon serves the mount point now."""
        self.pid = int(self.status()["pid"])

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads((self.mountpoint / ".vaultfs" / "status").read_text())
        return result

    def log(self) -> str:
        try:
            return (self.cache_dir / "vaultfs.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        stop_daemon(self.mountpoint, self.pid)


@pytest.fixture
def daemon_factory(tmp_path: Path) -> Iterator[Any]:
    """Start daemons with ``daemon_factory(url, options)``; all are stopped at the end."""
    started: list[Daemon] = []

    def start(url: str, options: str = "") -> Daemon:
        daemon = Daemon(url, tmp_path / f"m{len(started)}", options)
        started.append(daemon)
        return daemon.start()

    try:
        yield start
    finally:
        for daemon in started:
            daemon.stop()


def documents(vault: VaultProcess) -> list[dict[str, Any]]:
    session = login(vault.url)
    r = httpx.get(
        f"{vault.url}/api/v25.1/objects/documents",
        headers={"Authorization": session},
        params={"limit": 200},
    )
    body = r.json()
    assert body["responseStatus"] == "SUCCESS", body
    found: list[dict[str, Any]] = body["documents"]
    return [d.get("document", d) for d in found]


def latest_file(mountpoint: Path, doc_id: int) -> Path:
    """The latest source file of document ``doc_id`` in the mount (found by xattr)."""
    for directory, subdirs, files in os.walk(mountpoint):
        if "versions" in subdirs:
            path = Path(directory)
            if os.getxattr(path, "user.vault.id").decode() == str(doc_id):
                return next(path / name for name in files)
            subdirs.clear()
    raise AssertionError(f"document {doc_id} not found in {mountpoint}")
