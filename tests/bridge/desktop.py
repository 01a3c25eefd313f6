"""What a desktop's tools see of a real mount: inotify events (``inotifywait``), as a
file manager's open window receives them.

``Watcher`` runs ``inotifywait -m`` on a directory of the mount as a child process,
returns once its watch is in place, collects the events it prints (``EVENT name``) in a
thread, and is ended by PID in ``stop``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path
from types import TracebackType

import pytest

from vaultfs.testing.vault_process import wait_until

__all__ = ["Watcher"]


class Watcher:
    """``inotifywait -m`` on ``directory``; ``events`` holds ``(event, name)`` pairs."""

    def __init__(self, directory: Path) -> None:
        if shutil.which("inotifywait") is None:
            if os.environ.get("CI"):  # the README's test command installs it
                pytest.fail("inotifywait is not installed: ./run test installs it")
            pytest.skip("needs inotifywait (Debian package inotify-tools)")
        self.directory = directory
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.proc = subprocess.Popen(
            ["inotifywait", "-m", "--format", "%e %f", str(directory)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read_events, daemon=True).start()
        threading.Thread(target=self._read_ready, daemon=True).start()
        try:
            wait_until(self._ready.is_set, timeout=10, what="inotifywait's watch")
        except BaseException:
            self.stop()
            raise

    def _read_ready(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if "Watches established" in line:
                self._ready.set()

    def _read_events(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event, _, name = line.rstrip("\n").partition(" ")
            with self._lock:
                self.events.append((event, name))

    def seen(self, event: str, name: str) -> bool:
        """Whether an event whose flags include ``event`` was raised for ``name``."""
        with self._lock:
            return any(event in flags.split(",") and n == name for flags, n in self.events)

    def wait_for(self, event: str, name: str, timeout: float = 20.0) -> None:
        wait_until(lambda: self.seen(event, name), timeout=timeout, what=f"{event} {name}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
