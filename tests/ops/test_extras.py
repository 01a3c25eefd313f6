"""A command that needs an extra that is not installed names it and exits with 2 (the
installed wheel's own check is tests/ops/test_wheel_install.py; here the extra's
modules are hidden from ``vaultfs.extras`` in this environment)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultfs import extras
from vaultfs.cli import build_parser
from vaultfs.server.command_options import installed_store
from vaultfs.server.storage.content import ContentUnavailable


@pytest.fixture
def without(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Module names ``vaultfs.extras`` is told are not installed."""
    hidden: set[str] = set()
    real = extras.find_spec

    def find_spec(name: str) -> object:
        return None if name in hidden else real(name)

    monkeypatch.setattr(extras, "find_spec", find_spec)
    return hidden


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--data", "{tmp}/data"],
        ["serve-admin", "unlock", "someone", "--data", "{tmp}/data"],
        ["demo", "{tmp}/demo"],
    ],
    ids=lambda argv: argv[0],
)
def test_without_the_server_extra(
    without: set[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    without.add("sqlalchemy")
    args = build_parser().parse_args([a.format(tmp=tmp_path) for a in argv])
    assert args.handler(args) == 2
    err = capsys.readouterr().err
    assert f"vaultfs {argv[0]}: the local vault is not installed (no sqlalchemy)" in err
    assert "pip install 'vaultfs[server]'" in err
    assert not list(tmp_path.iterdir())  # nothing made, nothing started


def test_a_bucket_without_the_s3_extra(without: set[str], tmp_path: Path) -> None:
    without.update({"boto3", "botocore"})
    with pytest.raises(ContentUnavailable, match=r"pip install 'vaultfs\[s3\]'"):
        installed_store("s3://bucket/prefix", tmp_path)
    # A directory needs no extra.
    assert installed_store(str(tmp_path / "blobs"), tmp_path) is not None


def test_everything_is_installed_here() -> None:
    """The check above can fail: this environment has every extra (``./run``'s)."""
    assert extras.missing("server") == [] and extras.missing("s3") == []
