"""Named profiles load from the config file and name what is wrong; ``vaultfs mount
NAME`` mounts one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD
from tests.ops.conftest import Daemon, needs_mount, run_vaultfs
from vaultfs.profiles import ProfileError, load_profile, names_profile
from vaultfs.testing.vault_process import VaultProcess


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_profile_loads_with_paths_expanded(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[profiles.work]
url = "http://127.0.0.1:8817"
user = "editor@vaultfs.demo"
mountpoint = "~/vault"
password_file = "~/.pw"
options = ["allow_delete", "poll_interval=5"]
""",
    )
    profile = load_profile("work", path)
    assert profile.url == "http://127.0.0.1:8817"
    assert profile.mountpoint == Path.home() / "vault"
    assert profile.password_file == Path.home() / ".pw"
    assert profile.options == ["allow_delete", "poll_interval=5"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[profiles.other]\nurl='u'\nuser='u'\nmountpoint='m'\n", "no [profiles.work]"),
        ("[profiles.work]\nuser='u'\nmountpoint='m'\n", "url is required"),
        ("[profiles.work]\nurl='u'\nuser='u'\nmountpoint='m'\noptions='ro'\n", "list of strings"),
        ("[profiles.work\n", "config.toml"),
    ],
)
def test_bad_profiles_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ProfileError, match=message.replace("[", r"\[")):
        load_profile("work", write(tmp_path, text))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="no config file"):
        load_profile("work", tmp_path / "absent.toml")


def test_option_keys_become_mount_options(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[profiles.work]\nurl='u'\nuser='u'\nmountpoint='/m'\n"
        "cache_size='2G'\npoll_interval=60\noptions=['ro']\n",
    )
    assert load_profile("work", path).options == ["ro", "cache_size=2G", "poll_interval=60"]


def test_arguments_without_a_slash_name_profiles() -> None:
    assert names_profile("work") and names_profile("work.2")
    assert not names_profile("./work") and not names_profile("/mnt/work")
    assert not names_profile("http://vault:8817")


@pytest.mark.mount
@needs_mount
def test_mount_status_and_umount_by_profile_name(
    vault_server: VaultProcess, tmp_path: Path
) -> None:
    mountpoint = tmp_path / "vault" / "work"  # made by the mount
    password = tmp_path / "work.password"
    password.write_text(DEMO_PASSWORD + "\n")
    password.chmod(0o644)
    config = write(
        tmp_path,
        f"""
[profiles.work]
url = "{vault_server.url}"
user = "{ADMIN}"
mountpoint = "{mountpoint}"
password_file = "{password}"
poll_interval = 5
options = ["cache_dir={tmp_path / "cache"}", "ro"]
""",
    )
    env = {"VAULTFS_CONFIG": str(config), "VAULTFS_PASSWORD": "not this one"}
    daemon = Daemon(vault_server.url, tmp_path)  # only for stop() in finally
    daemon.mountpoint = mountpoint
    try:
        refused = run_vaultfs("mount", "work", env=env)
        assert refused.returncode == 2 and "chmod 600" in refused.stderr
        assert not os.path.ismount(mountpoint)
        password.chmod(0o600)
        mounted = run_vaultfs("mount", "work", env=env)
        assert mounted.returncode == 0, mounted.stderr
        daemon.adopt()
        shown = run_vaultfs("status", "work", "--json", env=env)
        status = json.loads(shown.stdout)
        assert status["user"] == ADMIN and status["read_only"] is True
        assert status["mountpoint"] == str(mountpoint)
        done = run_vaultfs("umount", "work", env=env)
        assert done.returncode == 0, done.stderr
        assert not os.path.ismount(mountpoint)
    finally:
        daemon.stop()
