"""sd_notify: READY=1 only once the mount answers, STOPPING=1 on stop; nothing without
$NOTIFY_SOCKET. A datagram socket of the test plays the service manager."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD
from tests.ops.conftest import needs_mount
from vaultfs.bridge.commands.control import unmount
from vaultfs.bridge.daemon.notify import notify
from vaultfs.testing.vault_process import VaultProcess


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify"))
    sock.settimeout(60)  # a blocking receive with a bound, not a sleep
    with sock:
        yield sock


def receive_until(sock: socket.socket, wanted: str) -> list[str]:
    """Every assignment received up to and including the datagram holding ``wanted``."""
    seen: list[str] = []
    while wanted not in seen:
        seen += sock.recv(4096).decode().splitlines()
    return seen


def test_notify_sends_one_datagram(manager: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", manager.getsockname())
    assert notify("READY=1", "STATUS=up")
    assert manager.recv(4096) == b"READY=1\nSTATUS=up"


def test_notify_reaches_an_abstract_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"vaultfs-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(10)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert notify("STOPPING=1")
        assert sock.recv(4096) == b"STOPPING=1"


def test_notify_without_a_manager_does_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert not notify("READY=1")
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    assert not notify("READY=1")  # logged, never raised


@pytest.mark.mount
@needs_mount
def test_foreground_mount_reports_ready_then_stopping(
    vault_server: VaultProcess, manager: socket.socket, tmp_path: Path
) -> None:
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    env = dict(
        os.environ,
        NOTIFY_SOCKET=manager.getsockname(),
        VAULTFS_PASSWORD=DEMO_PASSWORD,
        INVOCATION_ID="0123456789abcdef",  # as under systemd: journal-style log lines
    )
    argv = [
        sys.executable, "-m", "vaultfs", "mount", vault_server.url, str(mountpoint),
        "--user", ADMIN, "--foreground", "-o", f"cache_dir={tmp_path / 'cache'}",
    ]  # fmt: skip
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        before = receive_until(manager, "READY=1")
        # READY=1 comes only when the kernel answers for the mount.
        assert os.path.ismount(mountpoint) and os.listdir(mountpoint)
        assert "STOPPING=1" not in before
        assert any(line.startswith("STATUS=mounted") for line in before)
        proc.send_signal(signal.SIGTERM)
        receive_until(manager, "STOPPING=1")
        assert proc.wait(timeout=60) == 0
        assert not os.path.ismount(mountpoint)
        assert proc.stderr is not None
        log = proc.stderr.read().decode()
        # journald style: priority prefix, no timestamp, one line per event
        assert "<6>vaultfs.bridge.daemon.mount: mounted" in log
        assert DEMO_PASSWORD not in log
    finally:
        if os.path.ismount(mountpoint):
            unmount(mountpoint)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
