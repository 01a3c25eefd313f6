"""The shipped unit files pass ``systemd-analyze verify``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
