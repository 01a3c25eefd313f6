"""The read-ahead knob of a mount: found by the mount's device numbers, raised only."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultfs.bridge.daemon import readahead

MOUNTINFO = (
    "42 27 0:39 / /tmp/other rw,nosuid - fuse.vaultfs x rw\n"
    "43 27 0:40 / /tmp/with\\040space/mnt rw,nosuid - fuse.vaultfs x rw\n"
)


def test_the_device_of_a_mount_point_with_an_escaped_space() -> None:
    assert readahead._device_of("/tmp/with space/mnt", MOUNTINFO) == "0:40"
    assert readahead._device_of("/tmp/nothing", MOUNTINFO) is None


def test_raised_only_when_lower(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    monkeypatch.setattr(readahead, "_MOUNTINFO", info)
    (tmp_path / "bdi" / "0:40").mkdir(parents=True)
    knob = tmp_path / "bdi" / "0:40" / "read_ahead_kb"
    knob.write_text("128\n")
    assert readahead.raise_read_ahead("/tmp/with space/mnt", 1024, tmp_path / "bdi")
    assert knob.read_text() == "1024\n"
    knob.write_text("4096\n")
    assert readahead.raise_read_ahead("/tmp/with space/mnt", 1024, tmp_path / "bdi")
    assert knob.read_text() == "4096\n"  # never lowered
    assert not readahead.raise_read_ahead("/tmp/other", 1024, tmp_path / "bdi")
