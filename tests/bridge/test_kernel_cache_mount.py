"""Listings the kernel keeps (pyfuse3 with the project's patch) stay true on a real mount,
and the same tests pass with the stock behaviour (``pyfuse3_features``): another
client's new, renamed and deleted documents are listed within one poll; this mount's
own creates, links and deletes at once; getxattr probes outside ``user.`` are not
supported (ENOTSUP, ENODATA for the ACL names), so ``ls -l`` asks once per run; a
plain listing of a big folder gives names and types without making an inode of every
entry, and ``ls -l`` after it the same attributes as ever; the start's log names the
features in use."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyfuse3
import pytest

from tests.bridge.test_index_mount import bulk_create
from tests.conftest import login
from vaultfs.bridge.daemon.readahead import READ_AHEAD_KIB
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until
from vaultfs.wire import parse_datetime

pytestmark = [pytest.mark.mount, pytest.mark.usefixtures("pyfuse3_features")]

API = "/api/v25.1"
GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


def _ok(response: httpx.Response) -> dict[str, object]:
    body: dict[str, object] = response.json()
    assert body["responseStatus"] == "SUCCESS", body
    return body


@pytest.fixture
def api(fresh_vault: VaultProcess) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=fresh_vault.url + API, headers={"Authorization": login(fresh_vault.url)}
    ) as client:
        yield client


@pytest.fixture
def deleting_mount(fresh_vault: VaultProcess, tmp_path: Path) -> Iterator[MountProcess]:
    """A mount (at the default poll interval) that may delete documents (``rm -r``);
    another client's changes are shown by ``MountProcess.refresh``."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    with MountProcess(fresh_vault.url, tmp_path, options="allow_delete") as mount:
        yield mount


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_the_start_names_the_features_in_use(
    deleting_mount: MountProcess, pyfuse3_features: str
) -> None:
    patched = "cache_readdir" in getattr(pyfuse3, "features", ())
    expected = {
        "default": "no_opendir, xattr_namespaces, noflush",
        "cache_readdir": "cache_readdir, xattr_namespaces",
        "stock": "none (stock pyfuse3 behaviour)",
    }[pyfuse3_features if patched else "stock"]
    # The whole log: its start is more than log()'s last lines once the index has spoken.
    log = deleting_mount.log_path
    wait_until(lambda: "kernel cache features" in log.read_text(), what="the log line")
    assert f"kernel cache features: {expected}" in log.read_text()
    if os.geteuid() == 0:  # as root the mount raises the kernel's read-ahead (every way)
        device = os.stat(deleting_mount.mountpoint).st_dev
        knob = Path(f"/sys/class/bdi/{os.major(device)}:{os.minor(device)}/read_ahead_kb")
        wait_until(lambda: int(knob.read_text()) >= READ_AHEAD_KIB, what="the read-ahead")


def test_a_big_folder_lists_names_and_types_then_stats_as_ever(
    deleting_mount: MountProcess, api: httpx.Client, pyfuse3_features: str
) -> None:
    made = bulk_create(api, 1500)
    deleting_mount.refresh()
    general = deleting_mount.mountpoint / "General"
    inodes_before = deleting_mount.status()["inodes"]
    with os.scandir(general) as entries:  # names and types, as ls and find read them
        listed = {entry.name: entry.is_dir(follow_symlinks=False) for entry in entries}
    assert sum(name.startswith("bulk ") for name in listed) == 1500
    numbered = deleting_mount.status()["inodes"] - inodes_before
    if pyfuse3_features == "default" and "readdirplus_auto" in getattr(pyfuse3, "features", ()):
        # Only the listing's first part carries attributes: the rest are names (the
        # kernel's choice, or the mount's with ``plus_names``: nothing stats them).
        assert numbered < 1000, numbered
    else:
        assert numbered >= 1500, numbered  # every entry with its attributes (READDIRPLUS)
    # The types the listing gave are those stat gives, and stat still answers.
    ls = subprocess.run(
        ["ls", "-l", "--time-style=+%s", str(general)], capture_output=True, text=True, check=True
    )
    assert sum(" bulk " in line for line in ls.stdout.splitlines()) == 1500
    for name, is_dir in listed.items():
        mode = os.lstat(general / name).st_mode
        assert stat.S_ISDIR(mode) == is_dir, name
    last = _ok(api.get(f"/objects/documents/{made[-1]}"))["document"]
    modified = parse_datetime(str(last["version_modified_date__v"]))  # type: ignore[index]
    assert os.stat(general / "bulk 1499").st_mtime_ns == int(modified.timestamp() * 1e9)


def test_a_program_that_reads_many_names_before_it_stats_them_gets_their_attributes(
    deleting_mount: MountProcess, api: httpx.Client
) -> None:
    """GLib (GNOME Files, ``gio``) reads a thousand names before it stats the first of
    them. The kernel's own choice gave it the first part of a big folder with
    attributes and the rest as names, then a lookup for each; the mount's
    (``plus_names``) gives attributes once a program looks up the names it was given, so
    that only a page of them is looked up. In every way of the features, fewer lookups
    than a third of the folder."""
    if shutil.which("gio") is None:
        pytest.skip("needs gio (Debian package libglib2.0-bin)")
    bulk_create(api, 3000)
    deleting_mount.refresh()
    general = deleting_mount.mountpoint / "General"
    before = deleting_mount.status()["fuse_requests"]
    listed = subprocess.run(
        ["gio", "list", "-a", "standard::*,time::*,unix::*", str(general)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    after = deleting_mount.status()["fuse_requests"]
    assert sum(line.startswith("bulk ") for line in listed.stdout.splitlines()) == 3000
    lookups = after.get("lookup", 0) - before.get("lookup", 0)
    assert lookups < 1000, (before, after)


def test_a_document_folder_is_listed_with_two_requests_at_most(
    pyfuse3_features: str, deleting_mount: MountProcess, api: httpx.Client
) -> None:
    """A file manager counting the items of every document folder lists each once: the
    kernel asks for the listing, then once more where the answer ended (answered
    empty, without making the listing again where the kernel keeps listings; by
    pyfuse3 itself where it offers ``kept_listings``: that read never reaches the
    daemon), and never more. Every way lists the same names, again after the kernel
    kept them."""
    bulk_create(api, 40)
    deleting_mount.refresh()
    general = deleting_mount.mountpoint / "General"
    folders = sorted(path for path in general.iterdir() if path.name.startswith("bulk "))
    assert len(folders) == 40
    before = deleting_mount.status()["fuse_requests"]
    first = [sorted(os.listdir(folder)) for folder in folders]
    after = deleting_mount.status()["fuse_requests"]
    assert all({"versions", "renditions", "attachments"} <= set(names) for names in first)
    assert [sorted(os.listdir(folder)) for folder in folders] == first
    readdirs = after.get("readdir", 0) - before.get("readdir", 0)
    offered = getattr(pyfuse3, "features", ())
    ends_in_c = pyfuse3_features == "default" and "kept_listings" in offered
    assert readdirs <= (1 if ends_in_c else 2) * len(folders), (before, after)


def test_another_clients_documents_are_listed_after_a_poll(
    deleting_mount: MountProcess, api: httpx.Client
) -> None:
    general = deleting_mount.mountpoint / "General"
    before = set(os.listdir(general))
    assert before == set(os.listdir(general))  # the second listing: kept (patched)
    body = _ok(
        api.post(
            "/objects/documents",
            data={**GENERAL, "name__v": "Made Elsewhere"},
            files={"file": ("elsewhere.txt", b"from another client\n")},
        )
    )
    doc_id = int(str(body["id"]))
    deleting_mount.refresh()
    assert set(os.listdir(general)) == before | {"Made Elsewhere"}
    doc_dir = general / "Made Elsewhere"
    assert os.listdir(doc_dir / "versions") == ["0.1"]
    # A new version: the document's own directories are listed anew.
    _ok(
        api.post(
            f"/objects/documents/{doc_id}",
            data={"createDraft": "uploadedContent"},
            files={"file": ("elsewhere.txt", b"second version\n")},
        )
    )
    deleting_mount.refresh()
    assert sorted(os.listdir(doc_dir / "versions")) == ["0.1", "0.2"]

    _ok(api.put(f"/objects/documents/{doc_id}", data={"name__v": "Renamed Elsewhere"}))
    deleting_mount.refresh()
    listed = set(os.listdir(general))
    assert "Renamed Elsewhere" in listed and "Made Elsewhere" not in listed
    assert listed == before | {"Renamed Elsewhere"}

    _ok(api.delete(f"/objects/documents/{doc_id}"))
    deleting_mount.refresh()
    assert set(os.listdir(general)) == before


def test_an_empty_listing_the_kernel_kept_shows_another_clients_attachment(
    deleting_mount: MountProcess, api: httpx.Client
) -> None:
    """An empty listing is complete after one reply: the kernel keeps it with no page
    to drop, so only the directory's attributes (its mtime) can tell it to list again."""
    general = deleting_mount.mountpoint / "General"
    doc_dir = next(
        p
        for p in sorted(general.iterdir())
        if (p / "versions").is_dir() and not os.listdir(p / "attachments")
    )
    doc_id = int(os.getxattr(doc_dir, "user.vault.id"))
    attachments = doc_dir / "attachments"
    assert os.listdir(attachments) == []  # the second listing: kept (patched)
    _ok(
        api.post(
            f"/objects/documents/{doc_id}/attachments",
            files={"file": ("from elsewhere.txt", b"attached by another client\n")},
        )
    )
    deleting_mount.refresh()
    assert os.listdir(attachments) == ["from elsewhere.txt"]
    assert (attachments / "from elsewhere.txt").read_bytes() == b"attached by another client\n"


def test_this_mounts_own_creates_links_and_deletes_are_listed_at_once(
    deleting_mount: MountProcess,
) -> None:
    general = deleting_mount.mountpoint / "General"
    before = set(os.listdir(general))
    # The umask applies to a new file (the kernel applies it: the mount declares no
    # POSIX ACLs; declared, the kernel would leave it to the mount).
    fd = os.open(general / "Own Report.txt", os.O_CREAT | os.O_WRONLY, 0o666)
    try:
        assert os.fstat(fd).st_mode & 0o777 == 0o666 & ~_umask()
        os.write(fd, b"made through the mount\n")
    finally:
        os.close(fd)
    assert "Own Report.txt" in os.listdir(general)  # the new file, before its document
    deleting_mount.settle()  # the document is made after the last close
    assert set(os.listdir(general)) == before | {"Own Report"}
    doc_dir = general / "Own Report"
    assert os.listdir(doc_dir / "versions") == ["0.1"]

    # Another version through the mount: versions/ lists it at once.
    (doc_dir / "Own Report.txt").write_bytes(b"saved again through the mount\n")
    deleting_mount.settle()
    assert sorted(os.listdir(doc_dir / "versions")) == ["0.1", "0.2"]

    references = doc_dir / "relationships" / "References"
    assert os.listdir(references) == []
    target = sorted(before)[0]
    os.symlink(f"../../../{target}", references / target)
    assert os.listdir(references) == [target]
    os.unlink(references / target)
    assert os.listdir(references) == []

    subprocess.run(["rm", "-r", str(doc_dir)], check=True)
    assert set(os.listdir(general)) == before


def test_getxattr_outside_user_is_not_supported_and_fields_still_answer(
    deleting_mount: MountProcess,
) -> None:
    general = deleting_mount.mountpoint / "General"
    doc_dir = general / sorted(os.listdir(general))[0]
    expected = {
        "security.selinux": errno.ENOTSUP,
        "trusted.anything": errno.ENOTSUP,
        "system.posix_acl_access": errno.ENOTSUP,  # the mount has no ACLs
        "system.posix_acl_default": errno.ENOTSUP,
    }
    for name, code in expected.items():
        with pytest.raises(OSError) as raised:
            os.getxattr(doc_dir, name)
        assert raised.value.errno == code, name
    assert os.getxattr(doc_dir, "user.vault.id").isdigit()
    with pytest.raises(OSError) as raised:
        os.getxattr(doc_dir, "user.vault.no_such_field__c")
    assert raised.value.errno == errno.ENODATA
    listing = subprocess.run(
        ["ls", "-l", str(general)], capture_output=True, text=True, check=True
    ).stdout
    assert doc_dir.name in listing


def test_ls_l_asks_for_the_security_label_and_acls_once_not_for_every_entry(
    deleting_mount: MountProcess, tmp_path: Path
) -> None:
    # ls remembers a file system that does not support a namespace (ENOTSUP) and asks
    # no other entry; with ENODATA it would ask every one, a round trip to the daemon each
    # (two for the ACL names of a directory).
    general = deleting_mount.mountpoint / "General"
    trace = tmp_path / "ls.trace"
    strace = ["strace", "-qq", "-e", "trace=getxattr,lgetxattr", "-o", str(trace)]
    subprocess.run(
        [*strace, "ls", "-lR", str(general)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    lines = trace.read_text().splitlines()
    entries = sum(len(dirs) + len(files) for _, dirs, files in os.walk(general))
    assert entries > 10
    for name in ("security.selinux", "system.posix_acl_access"):
        probes = [line for line in lines if f'"{name}"' in line]
        assert len(probes) == 1, probes
        assert "EOPNOTSUPP" in probes[0]
    assert len(lines) == 2, lines  # a directory's default ACL: not asked once unsupported
