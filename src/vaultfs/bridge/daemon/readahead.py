"""A larger read-ahead for the mount, where the kernel lets the daemon set it (as root).

Owns the one knob the kernel offers for how far it reads ahead of a sequential reader:
the mount's backing device info (``/sys/class/bdi/<major>:<minor>/read_ahead_kb``, the
device numbers of the mount in ``/proc/self/mountinfo``), as gcsfuse documents it. FUSE
starts it at the kernel's default (128 KiB: one request at a time), and caps it at what
the daemon answered at INIT, so it is raised after INIT only. Writing it needs root; for
anyone else the kernel's default stays, and the log says so once at debug level.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

__all__ = ["READ_AHEAD_KIB", "raise_read_ahead"]

log = logging.getLogger(__name__)

#: a sequential reader is then sent READs of up to 1 MiB (measured: 516 for 512 MiB)
READ_AHEAD_KIB = 1024
_MOUNTINFO = Path("/proc/self/mountinfo")
_BDI = Path("/sys/class/bdi")


#: how mountinfo escapes a space, a tab, a newline or a backslash in a path
_OCTAL = re.compile(r"\\([0-7]{3})")


def _char(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 8))


def _device_of(mountpoint: str, mountinfo: str) -> str | None:
    """``major:minor`` of the last mount at ``mountpoint`` (the one on top)."""
    found = None
    for line in mountinfo.splitlines():
        fields = line.split()
        # the mount point is field 5, with spaces and the like escaped as octal
        if len(fields) > 4 and _OCTAL.sub(_char, fields[4]) == mountpoint:
            found = fields[2]
    return found


def raise_read_ahead(mountpoint: str, kib: int = READ_AHEAD_KIB, bdi: Path = _BDI) -> bool:
    """Set the read-ahead of the mount at ``mountpoint`` to ``kib`` KiB unless it is that
    much already; whether it is at least that now."""
    try:
        device = _device_of(os.path.abspath(mountpoint), _MOUNTINFO.read_text())
        if device is None:
            return False
        knob = bdi / device / "read_ahead_kb"
        if int(knob.read_text()) >= kib:
            return True
        knob.write_text(f"{kib}\n")
    except (OSError, ValueError) as exc:  # not root, or no such knob
        log.debug("read-ahead of %s stays the kernel's: %s", mountpoint, exc)
        return False
    log.info("read-ahead of %s: %d KiB", mountpoint, kib)
    return True
