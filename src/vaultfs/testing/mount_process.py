"""A bridge mount run as a real process, for tests and benchmarks.

``MountProcess`` runs ``vaultfs mount --foreground`` of a vault as the demo admin
(password through the environment, never argv; by this interpreter or another
environment's), waits with a deadline until the mount
answers, reads its ``.vaultfs/status``, and in ``stop`` ends the daemon by PID and
unmounts (``fusermount3 -u -z``) whatever it left, also after a crash. In the suite the
daemon is forked from a process that imported its stack once
(``warm_start.start_command``), unless it is another environment's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from vaultfs.bridge.commands import control
from vaultfs.bridge.commands.control import alive, unmount
from vaultfs.testing.vault_process import (
    ADMIN,
    DEMO_PASSWORD,
    START_TIMEOUT,
    end_process,
    wait_until,
)
from vaultfs.testing.warm_start import ChildProcess, start_command

__all__ = [
    "POLLS",
    "MountProcess",
    "calls_but_polls",
    "calls_by_endpoint",
    "calls_since",
    "can_mount",
    "stop_daemon",
]

#: the endpoints of a mount's (or a WebDAV front's) looks at the vault's changes
POLLS = frozenset({"GET /objects/documents", "GET /objects/deletions/documents"})


def calls_but_polls(status: dict[str, Any]) -> int:
    """The API calls a mount's or a WebDAV front's ``status`` counts, its polls left out."""
    by_endpoint = status["api_calls_by_endpoint"]
    return int(status["api_calls"]) - sum(by_endpoint.get(polled, 0) for polled in POLLS)


def calls_by_endpoint(status: dict[str, Any]) -> dict[str, int]:
    """The API calls a ``status`` counts, by endpoint, its polls left out."""
    by_endpoint: dict[str, int] = status["api_calls_by_endpoint"]
    return {endpoint: n for endpoint, n in by_endpoint.items() if endpoint not in POLLS}


def calls_since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The calls by endpoint made between two counts (``calls_by_endpoint``)."""
    return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}


def can_mount() -> bool:
    return os.path.exists("/dev/fuse") and shutil.which("fusermount3") is not None


def stop_daemon(mountpoint: Path, pid: int | None) -> None:
    """Stop a daemonised mount: unmount (unconditionally: after a crash ismount() is
    False, ENOTCONN, yet the mount stays), then end its daemon, SIGKILL if it lingers."""
    unmount(mountpoint)
    if pid is not None and alive(pid):
        os.kill(pid, signal.SIGTERM)
        try:
            wait_until(lambda: not alive(pid), timeout=15, what="daemon exit")
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)


class MountProcess:
    """``vaultfs mount --foreground`` as a child process (password via the environment)."""

    def __init__(
        self,
        url: str,
        root: Path,
        *,
        options: str = "",
        cache_dir: Path | None = None,
        log_level: str = "DEBUG",
        user: str = ADMIN,
        mountpoint: Path | None = None,
        python: Path | None = None,
    ) -> None:
        self.url = url
        #: the interpreter of another environment (an install to test), which must not
        #: see this one's sources: it runs without ``PYTHONPATH``; this one's by default
        self.python = python
        self.user = user
        self.mountpoint = mountpoint or root / "mnt"
        self.cache_dir = cache_dir or root / "cache"
        self.log_path = self.cache_dir.with_suffix(".log")
        self.options = options
        self.log_level = log_level
        self.proc: ChildProcess | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = START_TIMEOUT, *, wait_index: bool = True) -> MountProcess:
        """Mount, and (``wait_index``) wait until the first reading of the index is
        done, as a mount answered only then before ``.vaultfs`` answered at once."""
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, VAULTFS_PASSWORD=DEMO_PASSWORD)
        argv = [
            "mount",
            self.url,
            str(self.mountpoint),
            "--user",
            self.user,
            "--foreground",
            "--log-level",
            self.log_level,
            "--log-file",
            str(self.log_path),
            "-o",
            ",".join(filter(None, [f"cache_dir={self.cache_dir}", self.options])),
        ]
        if self.python is not None:
            env.pop("PYTHONPATH", None)
        self.proc = start_command(argv, env, Path(os.devnull), python=self.python)
        try:
            wait_until(self._answers, timeout=timeout, what=f"mount at {self.mountpoint}")
            if wait_index:
                wait_until(
                    lambda: self.status()["index"]["ready"],
                    timeout=timeout,
                    what=f"the index of the mount at {self.mountpoint}",
                )
        except BaseException:
            self.stop()
            raise
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"mount exited with {self.proc.returncode}: {self.log()}")
        return os.path.ismount(self.mountpoint) and (self.mountpoint / ".vaultfs").is_dir()

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads((self.mountpoint / ".vaultfs" / "status").read_text())
        return result

    def quiet_calls(self) -> dict[str, int]:
        """The API calls made so far by endpoint, polls left out, once the mount is
        ``quiet``: a count that background work (a read's guess of a walk, a check-in
        after a close) cannot fall into the middle of. Two of them around what a test
        does count all that it cost. (A search's or a view's list call is the poll's
        endpoint: counting those, count the polls by their deletions' endpoint.)"""
        return calls_by_endpoint(self.quiet())

    def settle(self, timeout: float = 60.0) -> dict[str, Any]:
        """Wait (polling the status, with a deadline) until every save made through the
        mount is in the vault: nothing pending, no check-in or create under way, in two
        reads in a row (a release the kernel sent as the program exited is then
        surely being handled). Returns the last status."""
        return self._until_idle(_saving, "saves still under way", timeout)

    def quiet(self, timeout: float = 60.0) -> dict[str, Any]:
        """``settle``, and no download or read-ahead under way either: the calls counted
        after it are those of what a test does next (a read's guess of a walk downloads
        the next documents in the background). Returns the last status."""
        return self._until_idle(
            lambda status: _saving(status) or _fetching(status),
            "saves or downloads still under way",
            timeout,
        )

    def _until_idle(
        self, busy: Callable[[dict[str, Any]], object], what: str, timeout: float
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        quiet = 0
        while True:
            status = self.status()
            quiet = 0 if busy(status) else quiet + 1
            if quiet == 2:
                return status
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{what}: {status['pending_uploads']}, cache {status['cache']}"
                )
            time.sleep(0.02)

    def refresh(self, timeout: float = 60.0) -> dict[str, Any]:
        """What ``vaultfs refresh`` does: the daemon looks for the vault's changes now
        (another client's, made through the API), not at its next poll. Returns the
        status once that look is done."""
        status = control.refresh(self.mountpoint, timeout)
        if status is None:
            raise AssertionError(f"no refresh of {self.mountpoint} within {timeout}s")
        return status

    def document_dir(self, doc_id: int) -> Path:
        """The directory of document ``doc_id`` in the mount (found by its id xattr)."""
        for path in self.mountpoint.glob("*/**/"):
            if (path / "versions").is_dir() and os.getxattr(path, "user.vault.id") == str(
                doc_id
            ).encode():
                return path
        raise AssertionError(f"document {doc_id} not in the mount")

    def source_file(self, doc_id: int) -> Path:
        """The latest version's file of document ``doc_id`` in the mount."""
        doc_dir = self.document_dir(doc_id)
        return doc_dir / os.getxattr(doc_dir, "user.vault.filename__v").decode()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0) -> None:
        unmount(self.mountpoint)
        proc, self.proc = self.proc, None
        end_process(proc, timeout=timeout)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _saving(status: dict[str, Any]) -> bool:
    return bool(status["pending_uploads"] or status["saves_in_flight"] or status["new_files"])


def _fetching(status: dict[str, Any]) -> bool:
    return bool(status["cache"]["downloading"] or status["cache"]["read_ahead"])
