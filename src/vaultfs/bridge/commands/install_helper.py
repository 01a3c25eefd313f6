"""``vaultfs install-helper``: links ``mount.fuse.vaultfs`` where mount(8) looks for it.

mount(8) looks for ``mount.<type>`` helpers in /sbin; this links (or unlinks) the
console script pip installed beside this Python there.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["HELPER_DIR", "HELPER_NAME", "install"]

HELPER_NAME = "mount.fuse.vaultfs"
#: where mount(8) looks for ``mount.<type>`` helpers
HELPER_DIR = Path("/sbin")


def install(directory: Path = HELPER_DIR, *, remove: bool = False) -> str:
    """Link (or unlink) ``directory/mount.fuse.vaultfs`` to the installed console script;
    returns what was done. Never replaces a file that is not a link."""
    script = Path(sys.executable).parent / HELPER_NAME
    link = directory / HELPER_NAME
    if link.exists() and not link.is_symlink():
        raise OSError(f"{link} exists and is not a link; remove it yourself first")
    if remove:
        if not link.is_symlink():
            return f"{link} is not installed"
        link.unlink()
        return f"removed {link}"
    if not script.is_file():
        raise OSError(f"{script} is missing: install vaultfs with pip first")
    if link.is_symlink():
        link.unlink()
    link.symlink_to(script)
    return f"linked {link} -> {script}"
