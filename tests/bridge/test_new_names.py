"""Names the vault cannot take are refused when they are made, with the right errno."""

from __future__ import annotations

import errno
import os
from collections.abc import Awaitable, Callable

import pytest

from vaultfs import errors
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.new_names import NameRules
from vaultfs.bridge.tree.catalog import TypeCatalog
from vaultfs.bridge.tree.nodes import Kind, NodeKey

from .fakevault import FakeVault
from .fsdriver import listdir, walk

FOLDER = (Kind.TYPE, "Reference")
DOCUMENT = (Kind.DOC, 1)


def rules(vault: FakeVault) -> NameRules:
    return NameRules(TypeCatalog(vault))


def refused(
    rules: NameRules, name: str, *, directory: bool = False, parent: NodeKey = FOLDER
) -> int:
    with pytest.raises(errors.VaultError) as raised:
        rules.check(parent, name, directory=directory)
    return errors.errno_for(raised.value)


def test_a_name_that_is_not_utf8_is_einval_everywhere(vault: FakeVault) -> None:
    name = os.fsdecode(b"invalid-utf8-\xff.txt")
    for parent in (FOLDER, DOCUMENT):
        assert refused(rules(vault), name, parent=parent) == errno.EINVAL
    assert refused(rules(vault), name, directory=True) == errno.EINVAL


def test_a_name_over_255_bytes_is_enametoolong_everywhere(vault: FakeVault) -> None:
    long_name = "é" * 128  # 256 bytes, 128 characters
    assert refused(rules(vault), long_name, parent=DOCUMENT) == errno.ENAMETOOLONG
    rules(vault).check(DOCUMENT, "é" * 127 + "a", directory=False)  # 255 bytes: taken


def test_a_document_name_over_the_field_limit_is_enametoolong(vault: FakeVault) -> None:
    checks = rules(vault)
    checks.check(FOLDER, "n" * 100 + ".txt", directory=False)  # name__v of 100: taken
    assert refused(checks, "n" * 101 + ".txt") == errno.ENAMETOOLONG
    assert refused(checks, "n" * 101, directory=True) == errno.ENAMETOOLONG
    checks.check(FOLDER, "." + "n" * 150 + ".swp", directory=False)  # a scratch file
    checks.check(DOCUMENT, "n" * 150 + ".txt", directory=False)  # no new document


async def test_the_limit_comes_from_the_metadata_once_read(vault: FakeVault) -> None:
    catalog = TypeCatalog(vault)
    checks = NameRules(catalog)
    assert catalog.known_max_length("name__v") is None  # nothing read: no call made
    vault.fields["name__v"] = {"name": "name__v", "maxLength": 20}
    await catalog.fields()
    assert catalog.known_max_length("name__v") == 20
    assert refused(checks, "n" * 21 + ".txt") == errno.ENAMETOOLONG
    checks.check(FOLDER, "n" * 20 + ".txt", directory=False)


async def test_the_file_system_refuses_before_anything_is_made(
    core: FileSystem, vault: FakeVault
) -> None:
    folder = await walk(core, "Reference")
    before = await listdir(core, folder)
    bad = os.fsdecode(b"invalid-utf8-\xff.txt")
    for name, number in (("x" * 300, errno.ENAMETOOLONG), (bad, errno.EINVAL)):
        makers: list[Callable[[], Awaitable[object]]] = [
            lambda name=name: core.create(folder, name, 0o644, os.O_WRONLY),
            lambda name=name: core.mkdir(folder, name),
            lambda name=name: core.symlink(folder, name, "target"),
            lambda name=name: core.rename(folder, "Guide", folder, name, 0),
        ]
        for make in makers:  # the names are refused before any other check
            with pytest.raises(errors.VaultError) as raised:
                await make()
            assert errors.errno_for(raised.value) == number
    assert await listdir(core, folder) == before
    assert core.statfs()["namemax"] == 255
