"""The fields a create or an update sets: parsing a form against the type's field
specifications (which fields exist and may be set now), the required ones a create
must give, and the name a classification's defaulting rule gives a new document."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from vaultfs.errors import InvalidData, ParameterRequired

from . import metadata
from .content import StoredFile
from .fields import FieldSpec, parse_value

__all__ = ["check_required", "default_name", "name_default", "parse_fields"]


def parse_fields(
    specs: Mapping[str, FieldSpec], form: Mapping[str, str], *, creating: bool
) -> dict[str, Any]:
    """Parsed editable field values of a form; INVALID_DATA names a field that is not."""
    values: dict[str, Any] = {}
    for name, text in form.items():
        spec = specs.get(name)
        if spec is None:
            raise InvalidData(f"Invalid field [{name}]: no such field on this document type")
        allowed = spec["editable"] and (creating or not spec["setOnCreateOnly"])
        if not allowed:
            raise InvalidData(f"Field [{name}] is not editable")
        values[name] = None if text == "" else parse_value(spec, text)
    return values


def check_required(
    specs: Mapping[str, FieldSpec], values: Mapping[str, Any], *, lifecycle_given: bool
) -> None:
    """PARAMETER_REQUIRED naming every required field without a value."""
    missing = [
        name
        for name, spec in specs.items()
        if spec["required"] and not spec["systemAttribute"] and values.get(name) in (None, [])
    ]
    if not lifecycle_given:
        missing.insert(0, "lifecycle__v")
    if missing:
        raise ParameterRequired.naming(missing)


def name_default(where: metadata.Classification) -> str | None:
    for node in reversed(where.path):
        if node.name_default:
            return node.name_default
    return None


def default_name(rule: str, file: StoredFile | None) -> str | None:
    """Apply a name defaulting rule; ``{filename}`` is the file name without extension."""
    if "{filename}" in rule:
        if file is None:
            return None
        stem = posixpath.splitext(file.filename)[0] or file.filename
        return rule.replace("{filename}", stem)[:100]
    return rule
