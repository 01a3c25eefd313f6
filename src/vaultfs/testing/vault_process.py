"""A local vault server run as a real process, for tests and benchmarks.

``VaultProcess`` starts ``python -m vaultfs serve`` on 127.0.0.1 with a free port and
its own data directory, waits (polling with a deadline) until ``GET /api/`` answers,
and stops it by PID. It can be stopped and started again on the same port and data,
which is how tests simulate an outage or a restart. In the suite the server is forked
from a process that imported the server's stack once (``warm_start.start_command``).
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import httpx

from vaultfs.testing.warm_start import ChildProcess, start_command

__all__ = [
    "ADMIN",
    "DEMO_PASSWORD",
    "EDITOR",
    "START_TIMEOUT",
    "VIEWER",
    "VaultProcess",
    "free_port",
    "wait_until",
]

#: How long a process started here may take to answer (a deadline, not a measure: a
#: parallel run of the suite on a busy machine starts several at once, each importing
#: its stack while the others run).
START_TIMEOUT = 120.0

#: The demo users of every test vault, and their password.
ADMIN = "admin@vaultfs.demo"
EDITOR = "editor@vaultfs.demo"
VIEWER = "viewer@vaultfs.demo"
DEMO_PASSWORD = "test-Passw0rd!"


def _worker_share() -> tuple[int, int]:
    """(this process's index, how many share the ports): the suite's parallel workers
    (pytest-xdist: ``PYTEST_XDIST_WORKER=gwN``, ``PYTEST_XDIST_WORKER_COUNT``), else (0, 1)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 1:
        return int(worker[2:]), int(count)
    return 0, 1


def free_port() -> int:
    """A port free on 127.0.0.1 now, for a server about to start.

    Between this answer and the server's bind the port is free for anyone to take, and a
    server stopped to be started again (an outage) leaves its port free for seconds.
    Parallel workers of the suite therefore take ports from disjoint shares (the kernel
    hands out even ports for a bind to port 0: ``port // 2`` modulo the workers), so one
    worker never picks a port another's server stands on or is about to."""
    index, count = _worker_share()
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if (port // 2) % count == index:
            return port


def wait_until(predicate, timeout: float = 20.0, interval: float = 0.05, what: str = "condition"):
    """Poll ``predicate`` until it returns a true value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:
            last_exc = exc
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}") from last_exc


def end_process(
    proc: ChildProcess | None,
    sig: int = signal.SIGTERM,
    timeout: float = 10.0,
) -> None:
    """End a child process the tests started: ``sig``, then SIGKILL after ``timeout``."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@functools.cache
def _poll_tls() -> ssl.SSLContext:
    """The TLS settings of the start polls, made once: httpx makes them anew for every
    request without a client (it reads the whole bundle of certificates, 40-70 ms of
    CPU), and a poll every 50 ms while a server starts then takes a core's half from
    the very start it waits for."""
    return httpx.create_ssl_context()


def answers_http(proc: ChildProcess | None, url: str, what: str) -> bool:
    """Whether the server process ``proc`` answers 200 at ``url``; RuntimeError once it
    has exited (a wait for it would be in vain)."""
    assert proc is not None
    if proc.poll() is not None:
        raise RuntimeError(f"{what} exited with {proc.returncode}")
    try:
        return httpx.get(url, timeout=1.0, verify=_poll_tls()).status_code == 200
    except httpx.HTTPError:
        return False


class VaultProcess:
    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        extra_args: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.extra_args = extra_args or []
        self.env = env or {}
        self.proc: ChildProcess | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}-server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = START_TIMEOUT) -> VaultProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "VAULTFS_DEMO_PASSWORD": DEMO_PASSWORD, **self.env}
        argv = [
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--data",
            str(self.data_dir),
            *self.extra_args,
        ]
        self.proc = start_command(argv, env, self.log_path)
        try:
            wait_until(self._answers, timeout=timeout, what=f"vault server on {self.url}")
        except BaseException:
            self.stop()
            raise
        return self

    def _answers(self) -> bool:
        return answers_http(self.proc, self.url + "/api/", f"the server (log: {self.log()})")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        proc, self.proc = self.proc, None
        end_process(proc, sig)

    def __enter__(self) -> VaultProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
