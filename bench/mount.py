"""A vaultfs mount of the bench vault: ``vaultfs mount --foreground`` as a child process.

Owns starting a mount (password through the environment, never argv), waiting until it
answers and until its document index is built, reading its ``.vaultfs/status`` (API
calls made so far), and unmounting it. Every mount gets a fresh cache directory, so a
new mount is a cold mount.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.vaultproc import wait_until

from .vault import ADMIN, DEMO_PASSWORD

__all__ = ["Mount"]

#: no index polls during a run: their calls would blur the counts of a workload
_OPTIONS = "poll_interval=3600"
_LOGIN = "POST /auth"


class Mount:
    def __init__(self, url: str, workdir: Path) -> None:
        self.url = url
        self.root = workdir / "mnt"
        # A new, empty cache directory (mode 0700) for every mount: a cold start.
        self.cache_dir = Path(tempfile.mkdtemp(prefix="cache-", dir=workdir))
        self.log_path = self.cache_dir.with_suffix(".log")
        self.proc: subprocess.Popen[bytes] | None = None
        #: seconds from starting the process until its index was built
        self.seconds_to_index = 0.0

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 300.0) -> Mount:
        self.root.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        argv = [
            sys.executable, "-m", "vaultfs", "mount", self.url, str(self.root),
            "--user", ADMIN, "--foreground", "--log-level", "INFO",
            "--log-file", str(self.log_path), "-o", f"cache_dir={self.cache_dir},{_OPTIONS}",
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            argv,
            env=dict(os.environ, VAULTFS_PASSWORD=DEMO_PASSWORD),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until(self._answers, timeout=timeout, what=f"mount at {self.root}")
            wait_until(lambda: self.status()["index"]["ready"], timeout=timeout, what="the index")
        except BaseException:
            self.stop()
            raise
        self.seconds_to_index = time.perf_counter() - started
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"mount exited with {self.proc.returncode}: {self.log()}")
        return os.path.ismount(self.root) and (self.root / ".vaultfs").is_dir()

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads((self.root / ".vaultfs" / "status").read_text())
        return result

    def api_calls(self) -> int:
        """API calls made so far, logins left out (a session is not a workload's cost)."""
        status = self.status()
        return int(status["api_calls"]) - int(status["api_calls_by_endpoint"].get(_LOGIN, 0))

    def indexed_documents(self) -> int:
        return int(self.status()["index"]["documents"])

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the daemon (SIGTERM: it checks in what is pending and unmounts), make
        sure nothing stays mounted, and delete the cache."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if os.path.ismount(self.root):
            subprocess.run(["fusermount3", "-u", "-z", str(self.root)], check=False)
        shutil.rmtree(self.cache_dir, ignore_errors=True)

    def __enter__(self) -> Mount:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
