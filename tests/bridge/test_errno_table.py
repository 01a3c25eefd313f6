"""The errno table: the most specific class wins, whatever the table's order."""

from __future__ import annotations

import errno

import pytest

from vaultfs import errors
from vaultfs.errors import OperationNotPermitted, ReadOnly, VaultError, errno_for


class _StillReadOnly(ReadOnly):
    """A class of its own below one in the table."""


@pytest.mark.parametrize("order", ["as written", "reversed"])
def test_every_class_answers_its_own_errno_in_any_order(
    monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    table = dict(errors._ERRNO)
    if order == "reversed":
        monkeypatch.setattr(errors, "_ERRNO", dict(reversed(list(table.items()))))
    for cls, number in table.items():
        assert errno_for(cls("x")) == number, cls.__name__
    # a base class below its subclass, or above it: the subclass is the more specific
    assert errno_for(ReadOnly("x")) == errno.EROFS
    assert errno_for(OperationNotPermitted("x")) == errno.EPERM
    assert errno_for(_StillReadOnly("x")) == errno.EROFS  # its nearest base in the table


def test_what_the_table_does_not_name() -> None:
    assert errno_for(VaultError("x")) == errno.EIO
    assert errno_for(errors.VaultUnavailable("x")) == errno.EIO
    assert errno_for(OSError(errno.ENOSPC, "full")) == errno.ENOSPC
    assert errno_for(RuntimeError("x")) == errno.EIO
