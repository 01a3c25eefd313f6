"""The vault's search and views as folders on a real mount of the local vault, on each
backend (SQLite and PostgreSQL: their full-text indexes differ): words in a field,
words only in an older version's file, no match, a document the viewer may not see,
favourites marked and unmarked with ``ln -s`` and ``rm``, ``vaultfs search``, the
API calls a search costs, and answers refreshed after another client's change."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import EDITOR, VIEWER
from tests.server.helpers import api_client, assert_ok, upload
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}
#: what the mount counts a search's (and the index poll's) list calls under
LIST = "GET /objects/documents"
#: what each index poll reads once (the page of documents it reads is a list call, as a
#: search's is)
DELETIONS = "GET /objects/deletions/documents"


def word() -> str:
    return "zq" + uuid.uuid4().hex[:10]


@dataclass
class World:
    """The documents the module's tests search for, made before the mounts start (so
    the first index build holds them: the mounts poll at the default interval)."""

    vault: VaultProcess
    api: httpx.Client
    #: a word in the name of ``in_field`` only
    field_word: str
    in_field: int
    #: a word in the file of the first version of ``in_old`` only
    old_word: str
    in_old: int
    #: a word in the name and file of ``secret``, which the viewer may not see
    secret_word: str
    secret: int
    #: a document for Favorites
    liked: int


@pytest.fixture(scope="module")
def world(vault_server: VaultProcess) -> Iterator[World]:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    api = api_client(vault_server.url)
    try:

        def new(name: str, content: bytes, **fields: str) -> int:
            body = {**GENERAL, "name__v": name, **fields}
            return int(assert_ok(upload(api, "/objects/documents", body, "f.txt", content))["id"])

        field_word, old_word, secret_word = word(), word(), word()
        in_field = new(f"Budget {field_word} plan", b"nothing to see\n")
        in_old = new("Quarterly minutes", f"the {old_word} clause\n".encode())
        assert_ok(api.post(f"/objects/documents/{in_old}", files={"file": ("f.txt", b"new\n")}))
        editor = next(
            u["user"]["id"]
            for u in assert_ok(api.get("/objects/users"))["users"]
            if u["user"]["user_name__v"] == EDITOR
        )
        # A viewer role given to the editor alone: the demo viewer may not see it.
        secret = new(
            f"Secret {secret_word}", secret_word.encode(), **{"viewer__v.users": str(editor)}
        )
        liked = new(f"Liked {word()}", b"liked\n")
        yield World(
            vault_server, api, field_word, in_field, old_word, in_old, secret_word, secret, liked
        )
    finally:
        api.close()


@pytest.fixture(scope="module")
def admin(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MountProcess]:
    """The demo admin's mount, at the default poll interval."""
    with MountProcess(world.vault.url, tmp_path_factory.mktemp("admin")) as mount:
        yield mount


def run(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, timeout=120)


def vaultfs_search(
    *args: str | Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    return run(sys.executable, "-m", "vaultfs", "search", *args, cwd=cwd)


def calls(mount: MountProcess) -> dict[str, int]:
    counts: dict[str, int] = mount.status()["api_calls_by_endpoint"]
    return counts


def target(link: Path) -> Path:
    """The document directory a link leads to (its text read as the kernel reads it)."""
    return Path(os.path.normpath(link.parent / os.readlink(link)))


def test_words_in_a_field_are_found_in_one_list_call(admin: MountProcess, world: World) -> None:
    search = admin.mountpoint / ".search" / world.field_word
    before = calls(admin)
    [name] = os.listdir(search)
    link = search / name
    assert link.is_symlink() and name == f"Budget {world.field_word} plan"
    assert os.readlink(link) == f"../../General/{name}"
    assert os.getxattr(target(link), "user.vault.id") == str(world.in_field).encode()
    versions = json.loads(os.getxattr(search, "user.vault.search.versions"))
    assert versions == {name: ["0.1"]}
    after = calls(admin)
    # One list call for the search (one more at most: the index poll's page), nothing
    # downloaded, no document read one by one.
    assert 1 <= after.get(LIST, 0) - before.get(LIST, 0) <= 2
    grown = {k for k in after if after[k] != before.get(k, 0)}
    assert grown <= {LIST, DELETIONS}, grown
    # Kept for the poll interval: listing it again asks nothing but (maybe) the poll.
    again = calls(admin)
    assert os.listdir(search) == [name]
    assert calls(admin).get(LIST, 0) - again.get(LIST, 0) <= 1
    # The word is in a field, not in any file.
    assert os.listdir(admin.mountpoint / ".search" / "content" / world.field_word) == []


def test_words_only_in_an_older_versions_file(admin: MountProcess, world: World) -> None:
    content = admin.mountpoint / ".search" / "content" / world.old_word
    [name] = os.listdir(content)
    assert os.readlink(content / name) == f"../../../General/{name}"
    assert os.getxattr(target(content / name), "user.vault.id") == str(world.in_old).encode()
    # Version 0.1 holds the words, the latest (0.2) does not.
    assert json.loads(os.getxattr(content, "user.vault.search.versions")) == {name: ["0.1"]}
    assert os.listdir(admin.mountpoint / ".search" / "all" / world.old_word) == [name]


def test_no_match_is_an_empty_folder_and_exit_1(admin: MountProcess) -> None:
    nothing = word()
    assert os.listdir(admin.mountpoint / ".search" / nothing) == []
    result = vaultfs_search(admin.mountpoint, nothing)
    assert result.returncode == 1 and result.stdout == b""


def test_search_is_never_walked(admin: MountProcess) -> None:
    top = os.listdir(admin.mountpoint)
    assert ".search" not in top and {"Favorites", "My Documents", "Recent Documents"} <= set(top)
    assert os.path.isdir(admin.mountpoint / ".search")
    assert sorted(os.listdir(admin.mountpoint / ".search")) == ["all", "content"]
    found = run("find", admin.mountpoint, "-maxdepth", "2").stdout.decode()
    assert "/.search" not in found


def test_the_command_prints_paths_under_a_path(admin: MountProcess, world: World) -> None:
    result = vaultfs_search(admin.mountpoint, world.field_word)
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.decode().splitlines()
    assert os.getxattr(line, "user.vault.id") == str(world.in_field).encode()
    assert line == f"{admin.mountpoint}/General/Budget {world.field_word} plan"
    # Relative to the working directory, NUL-terminated, content only.
    general = admin.mountpoint / "General"
    result = vaultfs_search("--content", "-0", ".", world.old_word, cwd=general)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"./Quarterly minutes\0"
    # Nothing under another folder; the field word is in no file.
    assert vaultfs_search(admin.mountpoint / "Clinical", world.field_word).returncode == 1
    assert vaultfs_search("--content", admin.mountpoint, world.field_word).returncode == 1
    # A path that is no mount's.
    refused = vaultfs_search("/tmp", world.field_word)
    assert refused.returncode == 2 and b"not on a vaultfs mount" in refused.stderr


def test_a_viewer_is_not_shown_what_it_may_not_see(
    admin: MountProcess, world: World, tmp_path: Path
) -> None:
    assert len(os.listdir(admin.mountpoint / ".search" / world.secret_word)) == 1
    with MountProcess(world.vault.url, tmp_path, user=VIEWER) as viewer:
        assert os.listdir(viewer.mountpoint / ".search" / world.secret_word) == []
        assert os.listdir(viewer.mountpoint / ".search" / "content" / world.secret_word) == []
        assert vaultfs_search(viewer.mountpoint, world.secret_word).returncode == 1
        # What the viewer may see is found all the same.
        assert len(os.listdir(viewer.mountpoint / ".search" / world.field_word)) == 1


def favourites(api: httpx.Client) -> list[int]:
    body = assert_ok(api.get("/objects/documents", params={"named_filter": "Favorites"}))
    return [d["document"]["id"] for d in body["documents"]]


def test_favourites_marked_with_ln_and_unmarked_with_rm(admin: MountProcess, world: World) -> None:
    favorites = admin.mountpoint / "Favorites"
    liked = admin.document_dir(world.liked)
    assert world.liked not in favourites(world.api)
    os.symlink(os.path.relpath(liked, favorites), favorites / "anything")
    assert world.liked in favourites(world.api)
    assert liked.name in os.listdir(favorites)  # listed under the document's name
    assert target(favorites / liked.name) == liked
    # The views list the admin's documents too.
    assert liked.name in os.listdir(admin.mountpoint / "My Documents")
    assert liked.name in os.listdir(admin.mountpoint / "Recent Documents")
    # Not a document: EINVAL; another view or a search: EPERM.
    with pytest.raises(OSError) as refused:
        os.symlink("../General", favorites / "folder")
    assert refused.value.errno == errno.EINVAL
    with pytest.raises(OSError) as refused:
        os.symlink(f"../{liked.parent.name}/{liked.name}", admin.mountpoint / "My Documents" / "x")
    assert refused.value.errno == errno.EPERM
    with pytest.raises(OSError) as refused:
        os.unlink(admin.mountpoint / "My Documents" / liked.name)
    assert refused.value.errno == errno.EPERM
    os.unlink(favorites / liked.name)
    assert world.liked not in favourites(world.api)
    assert liked.name not in os.listdir(favorites)
    assert liked.is_dir()  # unmarked, not deleted


def test_answers_are_refreshed_after_another_clients_change(world: World, tmp_path: Path) -> None:
    # A poll of 2 s: an answer is kept for a poll interval and a new document shows
    # after the next poll; at the default (30 s) this test would wait a minute.
    with MountProcess(world.vault.url, tmp_path, options="poll_interval=2") as mount:
        fresh = word()
        search = mount.mountpoint / ".search" / fresh
        assert os.listdir(search) == []
        editor = api_client(world.vault.url, EDITOR)
        with editor:
            body = {**GENERAL, "name__v": f"Later {fresh}"}
            doc = int(assert_ok(upload(editor, "/objects/documents", body, "l.txt", b"l"))["id"])
            wait_until(
                lambda: os.listdir(search) == [f"Later {fresh}"],
                timeout=30,
                what="the new document in the search",
            )
            favorites = mount.mountpoint / "Favorites"
            assert f"Later {fresh}" not in os.listdir(favorites)
            assert_ok(world.api.post(f"/objects/documents/{doc}/favorite"))
            wait_until(
                lambda: f"Later {fresh}" in os.listdir(favorites),
                timeout=30,
                what="the favourite another client marked",
            )
            assert_ok(world.api.delete(f"/objects/documents/{doc}"))
            wait_until(
                lambda: os.listdir(search) == [],
                timeout=30,
                what="the deleted document gone from the search",
            )


def requests(mount: MountProcess) -> dict[str, int]:
    counts: dict[str, int] = mount.status()["fuse_requests"]
    return counts


def test_views_are_kept_by_the_kernel_until_they_change(admin: MountProcess, world: World) -> None:
    mine = admin.mountpoint / "My Documents"
    name = f"Walked {word()}"
    doc = int(assert_ok(upload(world.api, "/objects/documents", {**GENERAL, "name__v": name},
                               "w.txt", b"w\n"))["id"])  # fmt: skip
    admin.refresh()
    assert target(mine / name) == admin.document_dir(doc)
    views = [mine, admin.mountpoint / "Recent Documents", admin.mountpoint / "Favorites"]
    # ``find`` lists each view, stats each link (its size) and reads what it points
    # to; no times are printed: a view's own mtime is "now" once its answer is stale.
    walk = ["find", *views, "-printf", "%p %s -> %l\n"]
    first = run(*walk)
    assert first.returncode == 0 and f"{name} ".encode() in first.stdout
    # (The kernel asks for a link's attributes once more after it first read the link:
    # it marks the link's access time stale then.)
    assert run(*walk).stdout == first.stdout
    before, counted = requests(admin), calls(admin)
    again = run(*walk)
    after = requests(admin)
    assert again.stdout == first.stdout
    # The kernel answered: no link looked up, read or statted again (at most the
    # views' own attributes, once their answer's poll interval ran out, and a list
    # call each then; the status reads here are one getattr each).
    assert after.get("lookup", 0) == before.get("lookup", 0)
    assert after.get("readlink", 0) == before.get("readlink", 0)
    assert after.get("getattr", 0) - before.get("getattr", 0) <= 2 * len(views) + 2
    # (a poll falling in the window is two calls: its page of documents, the deletions)
    now = calls(admin)
    polls = now.get(DELETIONS, 0) - counted.get(DELETIONS, 0)
    assert sum(now.values()) - sum(counted.values()) - 2 * polls <= len(views)
    # A rename through the mount: the view lists the new name at once, and the kernel
    # forgets the old one (sent by a thread of the mount's: waited for).
    renamed = f"Renamed {word()}"
    os.setxattr(admin.document_dir(doc), "user.vault.name__v", renamed.encode())
    assert renamed in os.listdir(mine) and name not in os.listdir(mine)
    assert target(mine / renamed) == admin.document_dir(doc)
    assert admin.document_dir(doc).name == renamed
    wait_until(lambda: not os.path.lexists(mine / name), timeout=30, what="the old name gone")
