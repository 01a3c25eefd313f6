"""Running the programs tests drive: any command, and the real ``vaultfs`` command as
a user runs it on a mounted vault (no credentials in its environment)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["run", "vaultfs"]


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
