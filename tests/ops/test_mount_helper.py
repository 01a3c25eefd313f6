"""The fstab helper turns mount(8)'s argv into ``vaultfs mount`` argv, and mount(8)
runs it for real: ``mount -t fuse.vaultfs`` and an fstab line, then umount."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD
from tests.ops.conftest import Daemon, needs_mount, run_vaultfs
from vaultfs.bridge.commands.control import alive, vaultfs_mounts
from vaultfs.bridge.commands.install_helper import HELPER_DIR, HELPER_NAME
from vaultfs.bridge.commands.mount_helper import translate
from vaultfs.testing.vault_process import VaultProcess, wait_until


def test_fstab_options_are_translated_and_systemd_ones_dropped() -> None:
    argv = translate(
        [
            "http://v:8817",
            "/mnt/v",
            "-o",
            "rw,_netdev,noauto,x-systemd.automount,user=ed@x,password_file=/etc/p,allow_other,ro",
        ]
    )
    assert argv == [
        "mount",
        "http://v:8817",
        "/mnt/v",
        "--user",
        "ed@x",
        "--password-file",
        "/etc/p",
        "-o",
        "allow_other,ro",
    ]


def test_flags_and_type_are_ignored() -> None:
    argv = translate(["-s", "http://v", "/m", "-t", "fuse.vaultfs", "-ouser=a"])
    assert argv == ["mount", "http://v", "/m", "--user", "a"]


def test_wrong_arity_is_a_clear_error() -> None:
    try:
        translate(["/only-one"])
    except SystemExit as exc:
        assert "usage" in str(exc)
    else:
        raise AssertionError("expected a usage error")


def test_installed_helper_never_puts_a_password_on_argv() -> None:
    helper = os.path.join(os.path.dirname(sys.executable), "mount.fuse.vaultfs")
    out = subprocess.run(
        [helper, "http://v", "/m", "-o", "user=a,password_file=/p"],
        env=dict(os.environ, VAULTFS_HELPER_DRY_RUN="1"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "vaultfs mount http://v /m --user a --password-file /p"


def test_username_wins_over_the_user_mount_adds_itself() -> None:
    argv = translate(["http://v", "/m", "-o", "users,username=ed,exec,user=alice"])
    assert argv == ["mount", "http://v", "/m", "--user", "ed"]


#: the tests that install the one helper of the machine run one after the other (on
#: two workers at once, one found the other's link and was skipped)
ONE_HELPER = pytest.mark.xdist_group("mount-helper")


@pytest.fixture
def installed_helper() -> Iterator[Path]:
    """``/sbin/mount.fuse.vaultfs`` linked by ``vaultfs install-helper``, removed after."""
    if os.geteuid() != 0:
        pytest.skip("mount(8) with a helper needs root")
    link = HELPER_DIR / HELPER_NAME
    if link.exists() or link.is_symlink():
        pytest.skip(f"{link} exists already; not touching it")
    try:
        done = run_vaultfs("install-helper")
        assert done.returncode == 0, done.stderr
        assert link.is_symlink() and link.resolve().name == HELPER_NAME
        yield link
    finally:
        if link.is_symlink():
            removed = run_vaultfs("install-helper", "--remove")
            assert removed.returncode == 0 and not link.is_symlink(), removed.stderr


def private_password(tmp_path: Path) -> Path:
    path = tmp_path / "password"
    path.write_text(DEMO_PASSWORD + "\n")
    path.chmod(0o600)
    return path


@pytest.mark.mount
@ONE_HELPER
@needs_mount
def test_mount_t_fuse_vaultfs_mounts_and_umount_ends_the_daemon(
    installed_helper: Path, vault_server: VaultProcess, tmp_path: Path
) -> None:
    daemon = Daemon(vault_server.url, tmp_path)
    daemon.mountpoint.mkdir()
    options = (
        f"user={ADMIN},password_file={private_password(tmp_path)},"
        f"cache_dir={daemon.cache_dir},_netdev,nofail,allow_other,poll_interval=5"
    )
    try:
        argv = ["mount", "-t", "fuse.vaultfs", vault_server.url, str(daemon.mountpoint)]
        result = subprocess.run([*argv, "-o", options], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr + daemon.log()
        assert os.path.ismount(daemon.mountpoint)
        daemon.adopt()
        status = daemon.status()
        assert status["user"] == ADMIN and status["vault_url"] == vault_server.url
        assert any(d.is_dir() for d in daemon.mountpoint.iterdir())
        assert daemon.mountpoint in vaultfs_mounts()
        subprocess.run(["umount", str(daemon.mountpoint)], check=True, timeout=60)
        assert not os.path.ismount(daemon.mountpoint)
        assert daemon.pid is not None
        wait_until(lambda: not alive(daemon.pid or 0), what="the daemon's exit after umount")
    finally:
        daemon.stop()


@pytest.mark.mount
@ONE_HELPER
@needs_mount
def test_an_fstab_line_mounts_with_username_and_ro(
    installed_helper: Path, vault_server: VaultProcess, tmp_path: Path
) -> None:
    daemon = Daemon(vault_server.url, tmp_path)
    daemon.mountpoint.mkdir()
    options = (
        f"_netdev,noauto,x-systemd.automount,username={ADMIN},"
        f"password_file={private_password(tmp_path)},cache_dir={daemon.cache_dir},ro"
    )
    fstab = tmp_path / "fstab"
    fstab.write_text(f"{vault_server.url} {daemon.mountpoint} fuse.vaultfs {options} 0 0\n")
    try:
        result = subprocess.run(
            ["mount", "--fstab", str(fstab), str(daemon.mountpoint)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr + daemon.log()
        daemon.adopt()
        assert daemon.status()["read_only"] is True
        done = run_vaultfs("umount", str(daemon.mountpoint))
        assert done.returncode == 0, done.stderr
        assert not os.path.ismount(daemon.mountpoint)
    finally:
        daemon.stop()
