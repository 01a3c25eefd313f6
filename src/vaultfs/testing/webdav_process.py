"""``vaultfs webdav`` as a child process, for tests (password via the environment)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Self

import httpx

from vaultfs.testing.vault_process import (
    ADMIN,
    DEMO_PASSWORD,
    START_TIMEOUT,
    end_process,
    free_port,
    wait_until,
)

__all__ = ["WebdavProcess"]


class WebdavProcess:
    """The front of ``user`` on loopback; with ``tls`` (certificate, key) and a
    ``host`` beyond loopback, the front where each WebDAV user signs in."""

    def __init__(
        self,
        url: str,
        root: Path,
        *,
        user: str = ADMIN,
        args: list[str] | None = None,
        host: str = "127.0.0.1",
        tls: tuple[Path, Path] | None = None,
    ):
        self.url = url
        self.user = user
        self.host = host
        self.tls = tls
        self.port = free_port()
        self.cache_dir = root / f"webdav-cache-{self.port}"
        self.log_path = root / f"webdav-{self.port}.log"
        self.args = args or []
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def start(self, timeout: float = START_TIMEOUT) -> WebdavProcess:
        who = ["--user", self.user] if self.tls is None else []
        tls = (
            []
            if self.tls is None
            else ["--tls-cert", str(self.tls[0]), "--tls-key", str(self.tls[1])]
        )
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vaultfs",
                "webdav",
                self.url,
                *who,
                "--listen",
                f"{self.host}:{self.port}",
                *tls,
                "--cache-dir",
                str(self.cache_dir),
                "--log-level",
                "DEBUG",
                "--log-file",
                str(self.log_path),
                *self.args,
            ],
            env=dict(os.environ, VAULTFS_PASSWORD=DEMO_PASSWORD),
            stdin=subprocess.DEVNULL,
            stdout=self.log_path.with_suffix(".out").open("ab"),
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until(self._answers, timeout=timeout, what=f"webdav front on {self.address}")
        except BaseException:
            self.stop()
            raise
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"webdav exited with {self.proc.returncode}: {self.log()}")
        try:
            # Any answer will do (401 from a front where each user signs in). No check of
            # a certificate: plain HTTP, or the front's own; and no bundle of them read
            # for each poll (40-70 ms of CPU each).
            r = httpx.request("OPTIONS", self.address + "/", timeout=2, verify=False)
            return r.status_code < 500
        except httpx.HTTPError:
            return False

    def log(self) -> str:
        try:
            out = self.log_path.with_suffix(".out")
            return self.log_path.read_text(errors="replace") + out.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0) -> None:
        if self.proc is not None:
            end_process(self.proc, timeout=timeout)
            self.proc = None

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing of the front's stop runs. ``start`` again
        serves on the same port from the same cache directory."""
        if self.proc is not None:
            end_process(self.proc, signal.SIGKILL)
            self.proc = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
