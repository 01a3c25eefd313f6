"""Running the programs tests drive: any command, the real ``vaultfs`` command as a
user runs it on a mounted vault (no credentials in its environment), and one headless
LibreOffice driven through UNO (``apps/office_uno.py``), which the ``office`` fixture
(tests/conftest.py) starts once for the whole run."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = ["OFFICE_DRIVER", "SYSTEM_PYTHON", "Office", "need", "run", "vaultfs"]

#: Debian's Python, for which python3-uno is built (the tests' own may be another)
SYSTEM_PYTHON = "/usr/bin/python3"
OFFICE_DRIVER = Path(__file__).parent / "apps" / "office_uno.py"


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(map(str, argv)), capture_output=True, text=True, timeout=60)


def vaultfs(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    """``python -m vaultfs ARGV`` without ``VAULTFS_PASSWORD``: commands that work
    through the mount must not need it."""
    env = {k: v for k, v in os.environ.items() if k != "VAULTFS_PASSWORD"}
    return subprocess.run(
        [sys.executable, "-m", "vaultfs", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def need(program: str) -> str:
    """The path of ``program``; in CI its absence fails the test (the README's test
    command installs it), elsewhere it skips."""
    path = shutil.which(program)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{program} is not installed: ./run test installs it")
        pytest.skip(f"needs {program}")
    return path


def need_uno() -> None:
    """Debian's Python must import ``uno`` (python3-uno) to drive LibreOffice."""
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import uno"], capture_output=True, check=False)
    if probe.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("python3-uno is not installed: ./run test installs it")
        pytest.skip("needs python3-uno")


def end_group(proc: subprocess.Popen[bytes], *, timeout: float = 15) -> None:
    """SIGTERM to the process group ``proc`` leads (started with a session of its own),
    SIGKILL if it lingers past ``timeout`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


class Office:
    """One headless LibreOffice, driven by ``office_uno.py`` one action at a time."""

    def __init__(self, root: Path) -> None:
        self.pipe = f"vaultfs-test-{os.getpid()}"
        self.profile = root / "profile"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Office:
        soffice = need("soffice")
        self.proc = subprocess.Popen(
            [
                soffice,
                "--headless",
                "--invisible",
                "--nologo",
                "--norestore",
                "--nodefault",
                "--nolockcheck",
                f"-env:UserInstallation={self.profile.as_uri()}",
                f"--accept=pipe,name={self.pipe};urp;",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its helper processes go with it (killpg)
        )
        return self

    def argv(self, *args: str | Path) -> list[str]:
        """The command line of one action of the driver."""
        return [SYSTEM_PYTHON, str(OFFICE_DRIVER), self.pipe, *map(str, args)]

    def __call__(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(self.argv(*args), capture_output=True, text=True, timeout=180)
        if check:
            assert result.returncode == 0, f"{args}: {result.returncode}\n{result.stderr}"
        return result

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        end_group(proc, timeout=20)
