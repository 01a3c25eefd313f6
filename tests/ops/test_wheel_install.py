"""``pip install vaultfs`` is the mount alone: the wheel, installed without extras into a
fresh virtual environment, mounts a vault and reads through it, and holds none of the
local vault's stack; its ``serve``, ``serve-admin`` and ``demo`` name the extra to
install.

The wheel is built from this tree (``pip wheel``, the project's build backend in pip's
isolated build) and installed with its dependencies from the package registry, the way
a user installs it: the test is marked ``registry`` (deselect it with ``-m "not
registry"`` on a machine without one). The versions are pinned to this environment's
(a constraints file), so the resolver picks what the suite runs with and pip's cache
usually has; pyfuse3 is built from its source distribution once per machine (it needs
libfuse3-dev, which ``./run`` installs) and taken from pip's wheel cache after that.
The vault is served from this environment (``vault_server``).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import API, login
from tests.ops.conftest import documents, needs_mount
from vaultfs.bridge.content.prefetch import AHEAD
from vaultfs.testing.mount_process import MountProcess, calls_since
from vaultfs.testing.vault_process import VaultProcess

pytestmark = [pytest.mark.registry]

ROOT = Path(__file__).resolve().parents[2]

#: what the local vault installs (project names, normalised): none may come with the mount
SERVER_PACKAGES = frozenset(
    {
        "starlette",
        "hypercorn",
        "python-multipart",
        "sqlalchemy",
        "alembic",
        "mako",
        "psycopg",
        "psycopg-binary",
        "boto3",
        "botocore",
        "s3transfer",
    }
)

#: what reading one file found by walking the tree may cost, polling aside: its download
#: and the read-ahead of the documents after it in its folder (the mount takes the walk
#: for ``grep -r``'s)
_MAX_READ_CALLS = 1 + AHEAD


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _clean_env() -> dict[str, str]:
    """The environment of the other installation's processes: this tree's sources (the
    suite's ``PYTHONPATH``) must not stand in for what the wheel installed."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def _run(*argv: str | Path, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv],
        env=_clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The python of a fresh virtual environment holding the wheel of this tree, installed
    without extras."""
    base = tmp_path_factory.mktemp("wheel-install")
    # A copy of what the build reads: an in-tree build would leave build/ behind.
    tree = base / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    shutil.copytree(
        ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    built = _run(
        sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", base / "wheels", tree,
        timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (base / "wheels").glob("vaultfs-*.whl")

    venv = base / "venv"
    made = _run(sys.executable, "-m", "venv", "--without-pip", venv)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    pins = base / "constraints.txt"
    pins.write_text(
        "".join(
            f"{dist.metadata['Name']}=={dist.version}\n"
            for dist in importlib.metadata.distributions()
            if dist.metadata["Name"] and _normalised(dist.metadata["Name"]) != "vaultfs"
        )
    )
    # This environment's pip installs into the new one (``--python``): no pip in it.
    # A fresh machine builds pyfuse3 from source here once (minutes at most).
    result = _run(
        sys.executable, "-m", "pip", "--python", python, "install", "-q",
        "--constraint", pins, wheel,
        timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    yield python


def test_the_wheel_brings_none_of_the_server(installed: Path) -> None:
    listed = _run(
        installed,
        "-c",
        "import importlib.metadata as m, json;"
        " print(json.dumps([d.metadata['Name'] for d in m.distributions()]))",
    )
    assert listed.returncode == 0, listed.stderr
    names = {_normalised(name) for name in json.loads(listed.stdout)}
    where = _run(installed, "-c", "import vaultfs; print(vaultfs.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(installed.parent.parent), where
    assert {"vaultfs", "pyfuse3", "trio", "httpx", "keyring", "authlib", "jeepney"} <= names
    assert not names & SERVER_PACKAGES, sorted(names & SERVER_PACKAGES)


@pytest.mark.parametrize(
    "argv",
    [["serve"], ["serve-admin", "unlock", "someone"], ["demo", "{tmp}/demo"]],
    ids=lambda argv: argv[0],
)
def test_the_local_vault_names_its_extra(installed: Path, tmp_path: Path, argv: list[str]) -> None:
    vaultfs = installed.parent / "vaultfs"
    result = _run(vaultfs, *(a.format(tmp=tmp_path) for a in argv))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "pip install 'vaultfs[server]'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "demo").exists()  # the demo stopped before it made anything


@pytest.mark.mount
@needs_mount
def test_the_wheel_alone_mounts_and_reads(
    installed: Path, vault_server: VaultProcess, tmp_path: Path
) -> None:
    doc = next(d for d in documents(vault_server) if str(d["filename__v"]).endswith(".txt"))
    with httpx.Client(
        base_url=vault_server.url + API, headers={"Authorization": login(vault_server.url)}
    ) as api:
        expected = api.get(f"/objects/documents/{doc['id']}/file").content
    assert expected
    mount = MountProcess(vault_server.url, tmp_path, python=installed)
    try:
        mount.start()
        path = mount.source_file(int(doc["id"]))
        before = mount.quiet_calls()  # (finding it walked the folder: read-ahead)
        assert path.read_bytes() == expected
        spent = calls_since(before, mount.quiet_calls())
        # The daemon is the new environment's interpreter (whose vaultfs is the wheel's).
        argv0 = Path(f"/proc/{mount.pid}/cmdline").read_bytes().split(b"\0")[0]
        assert argv0 == bytes(installed)
    finally:
        mount.stop()
    assert sum(spent.values()) <= _MAX_READ_CALLS, spent
