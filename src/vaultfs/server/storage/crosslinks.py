"""The CrossLink fields of a create: a document whose content is another vault
document's, bound to its latest, latest steady-state or one specific version.

``crosslink_of`` validates them (all three required ones, a source that exists and
the caller may see, a known binding rule, the bound version when the rule binds one);
the create itself is ``changes.create_document``'s.
"""

from __future__ import annotations

from vaultfs.errors import InvalidData, ParameterRequired

from . import access
from .content import StoredFile
from .sql import Conn

__all__ = ["CROSSLINK_FIELDS", "crosslink_of"]

#: Fields that make a CrossLink document (create only).
CROSSLINK_FIELDS = (
    "source_vault_id__v",
    "source_document_id__v",
    "source_binding_rule__v",
    "bound_source_major_version__v",
    "bound_source_minor_version__v",
)
#: Binding rules of CrossLinks: label -> whether it binds a specific version.
_BINDING_RULES = {
    "Latest version": False,
    "Latest Steady State version": False,
    "Specific Document version": True,
}


def crosslink_of(
    conn: Conn, given: dict[str, str], file: StoredFile | None
) -> tuple[int, int, str, int | None, int | None] | None:
    """The validated CrossLink fields of a create (popped from ``given``), or None."""
    link = {name: given.pop(name) for name in CROSSLINK_FIELDS if name in given}
    if not link:
        return None
    for name in CROSSLINK_FIELDS[:3]:
        if name not in link:
            raise ParameterRequired(f"Missing required parameter [{name}] of a CrossLink")
    if file is not None:
        raise InvalidData("A CrossLink document takes its content from its source: no [file]")
    numbers: dict[str, int] = {}
    for name, text in link.items():
        if name != "source_binding_rule__v":
            if not (text.isascii() and text.strip().isdigit()):
                raise InvalidData(f"Invalid value for [{name}]: '{text}' is not a number")
            numbers[name] = int(text)
    given_rule = link["source_binding_rule__v"].strip().lower()
    rule = next((r for r in _BINDING_RULES if r.lower() == given_rule), None)
    if rule is None:
        raise InvalidData(
            f"Invalid value for [source_binding_rule__v]: '{given_rule}' (Latest version, "
            "Latest Steady State version or Specific Document version)"
        )
    vault_id, source_id = numbers["source_vault_id__v"], numbers["source_document_id__v"]
    source = conn.execute(
        "SELECT id FROM documents WHERE id = ? AND vault_id = ?", (source_id, vault_id)
    ).fetchone()
    if source is None:
        raise InvalidData(
            f"Invalid value for [source_document_id__v]: no document [{source_id}] in vault "
            f"[{vault_id}]"
        )
    access.check(conn, source_id, changes=False)  # a hidden source does not exist either
    major = minor = None
    if _BINDING_RULES[rule]:
        if "bound_source_major_version__v" not in numbers:
            raise ParameterRequired("Missing required parameter [bound_source_major_version__v]")
        major = numbers["bound_source_major_version__v"]
        minor = numbers.get("bound_source_minor_version__v", 0)
        exists = conn.execute(
            "SELECT 1 FROM versions WHERE doc_id = ? AND major = ? AND minor = ?",
            (source_id, major, minor),
        ).fetchone()
        if exists is None:
            raise InvalidData(
                f"Invalid value for [bound_source_major_version__v]: document [{source_id}] "
                f"has no version [{major}.{minor}]"
            )
    return vault_id, source_id, rule, major, minor
