"""The commands that do not mount never load pyfuse3 (nor the mount daemon).

Each check runs in a fresh interpreter, so what an earlier test imported cannot hide
an import: the child reports which of the daemon's modules it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_CHILD = """
import contextlib, io, json, sys
from vaultfs.cli import build_parser, main

argv = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    if argv[0] == "serve":
        # Serving runs until stopped: load all the handler would load, then stop.
        import vaultfs.server.app  # noqa: F401
        build_parser().parse_args(argv)
    else:
        try:
            main(argv)
        except SystemExit:
            pass
loaded = [m for m in ("pyfuse3", "vaultfs.bridge.daemon.mount", "vaultfs.bridge.daemon.fuse")
          if m in sys.modules]
print(json.dumps(loaded))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["serve", "--data", "/nonexistent"],
        ["status"],
        ["mount", "--help"],
        ["actions", "/nonexistent"],
        ["do", "/nonexistent", "approve"],
        ["event", "/nonexistent", "distribution__v", "approved_email__v"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_command_never_loads_pyfuse3(argv: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_mounting_does_load_the_daemon() -> None:
    """The check above can fail: the daemon's modules are what a mount imports."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, vaultfs.bridge.daemon.mount; print('pyfuse3' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == "True"


def test_the_process_helpers_load_neither_pytest_nor_pyfuse3() -> None:
    """bench/ imports vaultfs.testing without pytest, and starts no mount in-process."""
    modules = ["vault_process", "mount_process", "postgres", "s3_server"]
    child = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module('vaultfs.testing.' + name)\n"
        "print(json.dumps([m for m in ('pytest', 'pyfuse3') if m in sys.modules]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_a_mount_loads_none_of_the_servers_stack() -> None:
    """The command line registers ``serve`` and ``serve-admin``, but Hypercorn,
    Starlette, SQLAlchemy and Alembic are imported when a server starts: a mount daemon
    without them is about 30 MiB smaller."""
    child = (
        "import json, sys, vaultfs.cli, vaultfs.bridge.daemon.mount\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules}"
        " & {'hypercorn', 'starlette', 'sqlalchemy', 'alembic', 'mako', 'wsgidav'})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
