"""Version numbers as the bridge uses them: ``"1.2"`` parsed to (1, 2), and the latest
version (major, minor) of a document's record."""

from __future__ import annotations

from typing import Any

from vaultfs.bridge.tree.index import Record

__all__ = ["latest_version", "parse_version"]


def parse_version(number: str) -> tuple[int, int] | None:
    """``"1.2"`` -> (1, 2); None for anything else."""
    major, _, minor = number.partition(".")
    try:
        return int(major), int(minor)
    except ValueError:
        return None


def _num(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def latest_version(record: Record) -> tuple[int, int] | None:
    """The record's (major, minor); None when it lacks either number."""
    major = _num(record.get("major_version_number__v"))
    minor = _num(record.get("minor_version_number__v"))
    if major is None or minor is None:
        return None
    return major, minor
