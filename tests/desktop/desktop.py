"""GNOME Files itself on a virtual display, driven as a person would and read through
its accessibility tree.

``Desktop`` starts ``Xvfb`` (a display number of its own, ``-displayfd``) and, in a
session bus of its own (``dbus-run-session``, its own process group), GNOME Files on
one folder, with a home, runtime and cache directory of its own (its settings, its
search history, the file indexer's database: nothing of the machine's). Keys go to
its window through ``xdotool``; what it shows is read through AT-SPI
(``atspi_probe.py``, run by Debian's python3), polled with a deadline. Its own file
operations are asked for on its D-Bus interface (``org.gnome.Nautilus.FileOperations2``,
what a paste or a drag runs). ``stop`` ends the session's process group and then Xvfb,
by their ids.

GNOME Files is run as docs/user-guide.md ("On the desktop") advises for a machine
without graphics acceleration, which a virtual display is: animations off and the
cairo renderer. ``VAULTFS_DESKTOP_AS_IS=1`` runs it without that advice (GTK's OpenGL
renderer on software rendering, animations on): GNOME Files then stays at "Loading…"
or "Searching…" with nothing shown, and the tests fail (the user guide says why).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import pytest

from tests.programs import end_group
from vaultfs.testing.vault_process import end_process, wait_until

__all__ = ["Desktop", "View", "missing_programs", "need_desktop"]

#: Debian's Python, for which python3-pyatspi is built (the tests' own may be another)
SYSTEM_PYTHON = "/usr/bin/python3"
PROBE = Path(__file__).with_name("atspi_probe.py")
#: a screen the size of a laptop's; no TCP: the display is this machine's alone;
#: -noreset: by default Xvfb starts over when its last client leaves (the check that
#: it answers), refusing the clients that connect meanwhile ("cannot open display")
XVFB = ("Xvfb", "-screen", "0", "1280x800x24", "-nolisten", "tcp", "-noreset")
PROGRAMS = ("nautilus", "Xvfb", "xdotool", "dbus-run-session", "gdbus")
#: GNOME Files' file operations on the session bus (what the desktop's paste asks)
FILE_OPERATIONS_2 = "org.gnome.Nautilus.FileOperations2"
FILE_OPERATIONS = (
    *("gdbus", "call", "--session", "--dest", "org.gnome.Nautilus"),
    *("--object-path", "/org/gnome/Nautilus/FileOperations2"),
)
#: what docs/user-guide.md advises for GNOME Files without graphics acceleration
SETTINGS_INI = "[Settings]\ngtk-enable-animations=0\n"


def missing_programs() -> list[str]:
    """What GNOME Files on a virtual display needs and this machine lacks."""
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    probe = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import pyatspi"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        missing.append("python3-pyatspi")
    return missing


def need_desktop() -> None:
    """Skip unless GNOME Files and the tools that drive it are installed; in CI their
    absence fails (``./run test`` installs them)."""
    missing = missing_programs()
    if missing:
        reason = f"needs {', '.join(missing)} (Debian packages of ./run's APT_PACKAGES)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: ./run test installs them")
        pytest.skip(reason)


@dataclass(frozen=True)
class View:
    """One window of GNOME Files as its accessibility tree shows it."""

    title: str
    #: the file view's rows: each its labels' texts, the name first
    rows: tuple[tuple[str, ...], ...]
    #: every other text the window shows outside the sidebar
    labels: tuple[str, ...]

    @property
    def names(self) -> set[str]:
        return {row[0] for row in self.rows}

    @property
    def found(self) -> bool:
        """The rows are a search's results, each bound whole: its name and its folder
        (``General/``). Right after the search is typed the window is titled for it
        while its rows are still the folder's, and a probe can catch a row that GTK has
        bound its name of only."""
        return bool(self.rows) and all(len(row) >= 2 and row[1].endswith("/") for row in self.rows)

    @property
    def searching(self) -> bool:
        """The floating bar says "Searching…" (or "Loading…"): not done yet."""
        return any(text in ("Searching…", "Loading…") for text in self.labels)


class Desktop:
    """Xvfb, a session bus and GNOME Files on ``folder``, until ``stop``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log_path = root / "nautilus.log"
        self.bus_file = root / "bus-address"
        self.xvfb: subprocess.Popen[bytes] | None = None
        self.session: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] = {}

    def start(self, folder: Path, timeout: float = 60.0) -> Desktop:
        try:
            display = self._start_xvfb()
            self.env = self._environment(display)
            wait_until(self._display_answers, timeout=timeout, what=f"the display {display}")
            # nautilus is exec'ed by the shell the session runs: the bus address is
            # written before, and the session ends when GNOME Files does.
            script = 'printf %s "$DBUS_SESSION_BUS_ADDRESS" > "$0"; exec nautilus --new-window "$1"'
            with open(self.log_path, "wb") as log:
                self.session = subprocess.Popen(
                    ["dbus-run-session", "--", "sh", "-c", script, self.bus_file, str(folder)],
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            wait_until(self._bus_known, timeout=timeout, what="the session bus")
            self.env["DBUS_SESSION_BUS_ADDRESS"] = self.bus_file.read_text()
            # Its window first (X alone): the accessibility bus is asked for only once
            # GNOME Files is up, as a screen reader would find it.
            wait_until(lambda: self._window() is not None, timeout=timeout, what="its window")
            self.wait_for(lambda v: v.title == folder.name and not v.searching, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_xvfb(self) -> str:
        """Start Xvfb on a display number free now (it picks it: ``-displayfd``)."""
        read_end, write_end = os.pipe()
        try:
            with open(self.root / "xvfb.log", "wb") as log:
                self.xvfb = subprocess.Popen(
                    [*XVFB, "-displayfd", str(write_end)],
                    pass_fds=(write_end,),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            os.close(write_end)
            write_end = -1
            number = b""
            while not number.endswith(b"\n"):
                chunk = os.read(read_end, 16)  # written once it listens
                if not chunk:
                    raise RuntimeError(f"Xvfb exited ({self.xvfb.wait()}): {self._xvfb_log()}")
                number += chunk
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
        return f":{int(number)}"

    def _xvfb_log(self) -> str:
        return (self.root / "xvfb.log").read_text(errors="replace")[-2000:]

    def _display_answers(self) -> bool:
        """A client can use the display (Xvfb could still be starting up, or gone)."""
        assert self.xvfb is not None
        if self.xvfb.poll() is not None:
            raise RuntimeError(f"Xvfb exited ({self.xvfb.returncode}): {self._xvfb_log()}")
        probe = subprocess.run(
            ["xdotool", "getdisplaygeometry"], env=self.env, capture_output=True, check=False
        )
        return probe.returncode == 0

    def _environment(self, display: str) -> dict[str, str]:
        home = self.root / "home"
        runtime = self.root / "run"
        for path in (home / ".config" / "gtk-4.0", home / ".cache", home / ".local/share"):
            path.mkdir(parents=True, exist_ok=True)
        runtime.mkdir(mode=0o700, exist_ok=True)
        keep = ("PATH", "LANG", "LC_ALL", "TZ")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env.update(
            DISPLAY=display,
            GDK_BACKEND="x11",
            HOME=str(home),
            XDG_RUNTIME_DIR=str(runtime),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_CACHE_HOME=str(home / ".cache"),
            XDG_DATA_HOME=str(home / ".local/share"),
            # English labels, whatever the machine's language ("Searching…")
            LANGUAGE="en",
            LANG="C.UTF-8",
        )
        env.pop("LC_ALL", None)
        if not os.environ.get("VAULTFS_DESKTOP_AS_IS"):
            (home / ".config" / "gtk-4.0" / "settings.ini").write_text(SETTINGS_INI)
            env["GSK_RENDERER"] = "cairo"
        return env

    def _bus_known(self) -> bool:
        assert self.session is not None
        if self.session.poll() is not None:
            raise RuntimeError(f"the session ended ({self.session.returncode}): {self.log()}")
        return self.bus_file.exists() and bool(self.bus_file.read_text())

    # -- what it shows -------------------------------------------------------------

    def views(self) -> list[View]:
        """Every window GNOME Files shows now."""
        done = subprocess.run(
            [SYSTEM_PYTHON, str(PROBE)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            return []  # its accessibility bus not there yet: the next poll sees
        return [
            View(w["title"], tuple(map(tuple, w["rows"])), tuple(w["labels"]))
            for w in json.loads(done.stdout)["windows"]
        ]

    def wait_for(self, condition: Callable[[View], bool], timeout: float = 20.0) -> View:
        """The first window for which ``condition`` holds, polled until ``timeout``."""
        deadline = time.monotonic() + timeout
        seen: list[View] = []
        while True:
            assert self.session is not None
            if self.session.poll() is not None:
                raise AssertionError(f"GNOME Files exited: {self.log()}")
            seen = self.views()
            for view in seen:
                if condition(view):
                    return view
            if time.monotonic() > deadline:
                raise AssertionError(f"not shown within {timeout}s; GNOME Files shows {seen}")
            time.sleep(0.2)

    # -- what a person does --------------------------------------------------------

    def _xdotool(self, *argv: str) -> None:
        subprocess.run(["xdotool", *argv], env=self.env, check=True, timeout=60)

    def _window(self) -> str | None:
        """GNOME Files' window on the display (X's id), None while there is none."""
        assert self.session is not None
        if self.session.poll() is not None:
            raise RuntimeError(f"the session ended ({self.session.returncode}): {self.log()}")
        found = subprocess.run(
            ["xdotool", "search", "--onlyvisible", "--class", "nautilus"],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        return found.stdout.split()[0] if found.stdout.split() else None

    def type_keys(self, *keys: str, text: str = "") -> None:
        """Focus the window, press ``keys`` (``ctrl+f``), then type ``text``."""
        window = self._window()
        assert window is not None, "GNOME Files shows no window"
        self._xdotool("windowfocus", "--sync", window)
        if keys:
            self._xdotool("key", "--clearmodifiers", *keys)
        if text:
            self._xdotool("type", "--delay", "40", text)

    def copy(self, sources: list[Path], destination: Path) -> None:
        """GNOME Files copies ``sources`` into ``destination`` (its copy job, what a
        paste or a drag into its window runs), asked on its D-Bus interface."""
        uris = "[" + ", ".join(repr(p.as_uri()) for p in sources) + "]"
        method = f"{FILE_OPERATIONS_2}.CopyURIs"
        subprocess.run(
            [*FILE_OPERATIONS, "--method", method, uris, destination.as_uri() + "/", "{}"],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=60,
        )

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """End the session's process group (GNOME Files, its bus and what the bus
        started), then Xvfb, by their ids."""
        session, self.session = self.session, None
        if session is not None:
            _end_group(session)
        xvfb, self.xvfb = self.xvfb, None
        end_process(xvfb)

    def __enter__(self) -> Desktop:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    """The session's process group ended (``end_group``), and what is left of it."""
    end_group(proc)
    # what the bus started may outlive dbus-run-session by a moment
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
