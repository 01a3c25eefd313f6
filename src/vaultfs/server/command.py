"""Sub-commands of the server half (placeholder until the server lands)."""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this half's sub-commands to the ``vaultfs`` parser."""
