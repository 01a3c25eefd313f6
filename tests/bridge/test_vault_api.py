"""The tests' in-memory vault and the real client both satisfy ``VaultApi``.

mypy checks this module (``[tool.mypy] files``): assigning a ``FakeVault`` and a
``VaultClient`` to ``VaultApi`` fails the type check as soon as either drifts from the
protocol (a method missing, renamed, or with other parameters). The test below says the
same at run time for the parameter names, which is what keyword callers depend on.
"""

from __future__ import annotations

import inspect

import pytest

from vaultfs.client import VaultApi, VaultClient

from .fakevault import FakeVault


def _as_api(client: VaultClient, fake: FakeVault) -> tuple[VaultApi, VaultApi]:
    """Never called: the assignments are the check (mypy)."""
    real: VaultApi = client
    stand_in: VaultApi = fake
    return real, stand_in


def _calls() -> list[str]:
    return [
        name
        for name, member in vars(VaultApi).items()
        if not name.startswith("_") and inspect.isfunction(member)
    ]


def test_the_protocol_lists_the_calls() -> None:
    assert {"get_document", "download_file", "create_draft_streamed", "lock"} <= set(_calls())


@pytest.mark.parametrize("implementation", [VaultClient, FakeVault], ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", _calls())
def test_both_take_the_protocols_parameters(implementation: type, name: str) -> None:
    expected = inspect.signature(getattr(VaultApi, name)).parameters
    actual = inspect.signature(getattr(implementation, name)).parameters
    assert [(p.name, p.kind) for p in actual.values()] == [
        (p.name, p.kind) for p in expected.values()
    ]
