"""Warm starts (``vaultfs.testing.warm_start``): a forked ``vaultfs serve`` or ``vaultfs
mount`` runs the command with the start's arguments, environment and output, and is
followed as ``subprocess.Popen`` follows a child: its exit code, signals, a wait's
timeout."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from vaultfs.testing import warm_start
from vaultfs.testing.vault_process import DEMO_PASSWORD, free_port, wait_until


def test_a_forked_command_gets_its_arguments_environment_and_output(tmp_path: Path) -> None:
    output = tmp_path / "out.log"
    env = dict(os.environ)
    # A usage error: the command's own message and exit code, in the start's output.
    refused = warm_start.start(["serve", "--tls-cert", str(tmp_path / "c")], env, output)
    assert refused.wait(timeout=60) == 2
    assert refused.poll() == 2
    assert "--tls-cert and --tls-key go together" in output.read_text()
    helped = warm_start.start(["mount", "--help"], env, output)
    assert helped.wait(timeout=60) == 0
    assert "usage: vaultfs mount" in output.read_text()


def test_a_forked_server_answers_times_out_a_wait_and_ends_on_a_signal(tmp_path: Path) -> None:
    port = free_port()
    env = dict(os.environ, VAULTFS_DEMO_PASSWORD=DEMO_PASSWORD)
    argv = ["serve", "--host", "127.0.0.1", "--port", str(port), "--data", str(tmp_path / "d")]
    server = warm_start.start(argv, env, tmp_path / "server.log")
    try:
        wait_until(
            lambda: httpx.get(f"http://127.0.0.1:{port}/api/", timeout=1).status_code == 200,
            timeout=120,
            what="the forked server",
        )
        assert server.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            server.wait(timeout=0.1)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    finally:
        server.kill()  # nothing, once it has exited
    assert server.returncode == 0
    assert (tmp_path / "d").is_dir()
