"""Fixtures of the save matrix: a vault and a mount (at the default poll interval) of
this module's own, a vault API client and documents made for one test (LibreOffice is
the ``office`` fixture of tests/conftest.py).

Every save is judged the same way (``Save.check``): exactly one new draft, holding
exactly the bytes the program wrote, the lock released, the older version intact, and
no helper file (lock, temp, backup, swap) made into a document or a version.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import wait_until

GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


_names = itertools.count(1)


class Documents:
    """Documents made through the API for one test each, found in the mount."""

    def __init__(self, api: httpx.Client, mount: MountProcess) -> None:
        self.api, self.mount = api, mount

    def make(self, filename: str, content: bytes) -> Path:
        """A new General document holding ``content``; returns its source file's path
        in the mount, which nothing has read yet (its size there is the estimate)."""
        name = f"{Path(filename).stem} {next(_names)}"
        response = self.api.post(
            "/objects/documents",
            data={**GENERAL, "name__v": name},
            files={"file": (filename, content)},
        )
        body = response.json()
        assert body["responseStatus"] == "SUCCESS", body
        # Another client's document: shown once the mount looked for the vault's
        # changes, which ``vaultfs refresh`` asks for now.
        self.mount.refresh()
        path = self.mount.mountpoint / "General" / name / filename
        assert path.exists(), f"{path} is not in the mount after a refresh"
        return path


@pytest.fixture
def documents(module_api: httpx.Client, module_mount: MountProcess) -> Documents:
    """Documents of the module's vault, found in its mount (tests/conftest.py: at the
    default poll interval)."""
    return Documents(module_api, module_mount)


def doc_id_of(path: Path) -> int:
    return int(os.getxattr(path, "user.vault.id"))


def total_documents(api: httpx.Client) -> int:
    body = api.get("/objects/documents", params={"limit": 1}).json()
    return int(body["responseDetails"]["total"])


class Save:
    """Before and after of one save of the document at ``path`` in ``documents``' mount."""

    def __init__(self, documents: Documents, path: Path) -> None:
        self.api, self.path, self.mount = documents.api, path, documents.mount
        self.doc_id = doc_id_of(path)
        record = self._record()
        self.versions = [v["number"] for v in record["versions"]]
        self.original = self.latest_bytes()  # through the API: the mount stays unread
        self.documents = total_documents(self.api)

    def _record(self) -> dict[str, Any]:
        body: dict[str, Any] = self.api.get(f"/objects/documents/{self.doc_id}").json()
        assert body["responseStatus"] == "SUCCESS", body
        return body

    def latest_bytes(self) -> bytes:
        return self.api.get(f"/objects/documents/{self.doc_id}/file").content

    def check(self, expected: bytes | None = None, *, drafts: int = 1) -> bytes:
        """Assert ``drafts`` new versions (the last holding ``expected`` when given) and
        everything else unchanged; returns the latest content."""
        self.mount.settle()  # the check-in follows the program's last close
        record = self._record()
        versions = [v["number"] for v in record["versions"]]
        assert versions[: len(self.versions)] == self.versions
        assert len(versions) == len(self.versions) + drafts, (self.versions, versions)
        latest = self.latest_bytes()
        if expected is not None:
            assert hashlib.md5(latest).hexdigest() == hashlib.md5(expected).hexdigest(), (
                latest[:200],
                expected[:200],
            )
        # The kernel sends the last release after close() has returned (asynchronously),
        # and the check-out ends with it: wait for it, with a deadline.
        wait_until(
            lambda: not self.api.get(f"/objects/documents/{self.doc_id}/lock").json().get("lock"),
            timeout=15,
            what="the check-out to end",
        )
        major, minor = self.versions[-1].split(".")
        old = self.api.get(f"/objects/documents/{self.doc_id}/versions/{major}/{minor}/file")
        assert old.content == self.original  # the older version is intact
        assert total_documents(self.api) == self.documents  # no helper file became one
        assert record["document"]["filename__v"] == self.path.name
        return latest


def run(*argv: str | Path, check: bool = True, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=180, **kwargs
    )
    if check:
        assert result.returncode == 0, f"{argv}: {result.returncode}\n{result.stderr}"
    return result
