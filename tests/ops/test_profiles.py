"""Named profiles load from the config file and name what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultfs.profiles import ProfileError, load_profile


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
