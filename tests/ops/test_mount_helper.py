"""The fstab helper turns mount(8)'s argv into ``vaultfs mount`` argv."""

from __future__ import annotations

import os
import subprocess
import sys

from vaultfs.mount_helper import translate


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
