"""GNOME Files opening a folder, as a person opens it: how long until the window shows
the folder (its floating bar no longer says "Loading…"), and until GNOME Files and the
mount are done with it (it counts the items of every sub-folder it shows: done when
neither has used any CPU for ``_STILL`` seconds). On a virtual display of its own, driven
as the desktop tests drive it (``tests.desktop.desktop``)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.desktop.desktop import Desktop, missing_programs

from ..measure import cpu_seconds

__all__ = ["Opened", "missing_programs", "open_folder"]

#: seconds with no CPU used by GNOME Files or the mount: the folder is done with
_STILL = 3.0
#: how long a big folder may take to show and be counted
_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Opened:
    #: seconds until the window showed the folder
    shown: float
    #: seconds until GNOME Files and the mount were done with it (the last CPU used)
    settled: float


def _nautilus(session: int) -> list[int]:
    """GNOME Files' processes in the desktop session's process group."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/comm") as f:
                if f.read().strip() != "nautilus":
                    continue
            if os.getpgid(int(entry.name)) == session:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def open_folder(folder: Path, workdir: Path, others: Sequence[int] = ()) -> Opened:
    """GNOME Files opened on ``folder``; ``others``: processes that work for it (the
    mount's daemon), done when they are still too."""
    workdir.mkdir(parents=True, exist_ok=True)
    desktop = Desktop(workdir)
    started = time.perf_counter()
    try:
        desktop.start(folder, timeout=_TIMEOUT)
        shown = time.perf_counter() - started
        assert desktop.session is not None
        watched = [*_nautilus(desktop.session.pid), *others]
        last, moved = -1.0, time.perf_counter()
        while time.perf_counter() - moved < _STILL:
            if time.perf_counter() - started > _TIMEOUT:
                raise RuntimeError(f"GNOME Files still busy with {folder} after {_TIMEOUT} s")
            used = sum(cpu_seconds(pid) for pid in watched)
            if used != last:
                last, moved = used, time.perf_counter()
            time.sleep(0.1)
        return Opened(shown, moved - started)
    finally:
        desktop.stop()
