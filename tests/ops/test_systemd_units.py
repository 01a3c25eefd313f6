"""The shipped unit files pass ``systemd-analyze verify`` and run real commands."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vaultfs.bridge.commands.mount_helper import translate
from vaultfs.cli import build_parser

UNITS = Path(__file__).resolve().parents[2] / "systemd"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze missing")
@pytest.mark.parametrize(
    "unit",
    sorted(p.name for p in UNITS.iterdir() if p.suffix in (".service", ".mount", ".automount")),
)
def test_unit_verifies(unit: str, tmp_path: Path) -> None:
    # The examples name installed paths; point them at this checkout's entry points.
    vaultfs = str(Path(sys.executable).parent / "vaultfs")
    text = (UNITS / unit).read_text()
    text = text.replace("%h/.local/bin/vaultfs", vaultfs).replace("/usr/local/bin/vaultfs", vaultfs)
    name = unit.replace("@.", "@work.")
    (tmp_path / name).write_text(text)
    if unit.endswith(".automount"):
        (tmp_path / unit.replace(".automount", ".mount")).write_text(
            (UNITS / unit.replace(".automount", ".mount")).read_text()
        )
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(tmp_path / name)],
        capture_output=True,
        text=True,
    )
    problems = [line for line in result.stderr.splitlines() if unit.split("@")[0] in line]
    assert result.returncode == 0 and not problems, result.stderr


def _values(unit: str, key: str) -> list[str]:
    return [
        line.split("=", 1)[1]
        for line in (UNITS / unit).read_text().splitlines()
        if line.startswith(f"{key}=")
    ]


@pytest.mark.parametrize("unit", ["vaultfs@.service", "vaultfs-system@.service"])
def test_service_commands_are_real_vaultfs_commands(unit: str) -> None:
    commands = _values(unit, "ExecStart") + _values(unit, "ExecStop")
    assert len(commands) == 2
    for command in commands:
        program, *args = command.replace("%i", "work").split()
        assert program.endswith("/vaultfs")
        build_parser().parse_args(args)  # exits (fails the test) on an unknown option
    assert "--foreground" in commands[0]  # Type=notify: the unit's main process mounts


def test_mount_unit_options_are_helper_options() -> None:
    [options] = _values("srv-vaultfs-work.mount", "Options")
    argv = translate(["http://v", "/srv/vaultfs/work", "-o", options])
    args = build_parser().parse_args(argv)
    assert args.user == "editor@vaultfs.demo" and args.options == ["allow_other"]
