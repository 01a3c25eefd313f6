"""Document fields: the standard field definitions and the parsing of field values.

A field definition is the JSON of the spec's "Document field metadata record" (name,
scope, type, required, editable, ...). Standard fields are defined here because the
server computes the system-managed ones itself; vault-specific fields (``__c``) live
only in the ``doc_fields`` table. ``parse_value`` turns a form value (always text)
into the stored value, or raises ``InvalidData`` naming the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vaultfs.errors import InvalidData

__all__ = ["STANDARD_FIELDS", "FieldSpec", "field", "is_list", "parse_value"]

FieldSpec = dict[str, Any]


def field(
    name: str,
    label: str,
    type_: str = "String",
    *,
    required: bool = False,
    editable: bool = True,
    system: bool = False,
    scope: str = "DocumentVersion",
    max_length: int | None = None,
    repeating: bool = False,
    set_on_create_only: bool = False,
    queryable: bool = True,
    default: list[Any] | None = None,
    entries: list[str] | None = None,
    object_type: str | None = None,
    section: str = "generalProperties",
    help_content: str | None = None,
) -> FieldSpec:
    """One field metadata record (the computed parts are added by metadata.py)."""
    spec: FieldSpec = {
        "name": name,
        "scope": scope,
        "type": type_,
        "required": required,
        "repeating": repeating,
        "systemAttribute": system,
        "editable": editable,
        "setOnCreateOnly": set_on_create_only,
        "disabled": False,
        "label": label,
        "section": section,
        "hidden": False,
        "queryable": queryable,
    }
    if max_length is not None:
        spec["maxLength"] = max_length
    if default is not None:
        spec["defaultValue"] = default
    if entries is not None:
        spec["entryLabels"] = entries
    if object_type is not None:
        spec["objectType"] = object_type
        spec["relationshipType"] = "reference"
        spec["relationshipName"] = name.removesuffix("__v").removesuffix("__c") + "__vr"
    if help_content is not None:
        spec["helpContent"] = help_content
    return spec


def _system(name: str, label: str, type_: str = "String", **kw: Any) -> FieldSpec:
    kw.setdefault("editable", False)
    kw.setdefault("system", True)
    return field(name, label, type_, **kw)


_ROLE_HELP = "Role assignment: {users: [user ids], groups: [group ids]}"

#: Every standard field, in the order records and metadata show them.
STANDARD_FIELDS: list[FieldSpec] = [
    _system("id", "ID", "ID", scope="Document"),
    _system("version_id", "Version ID", "ID"),
    field("external_id__v", "External ID", max_length=255, scope="Document"),
    _system("document_number__v", "Document Number", "Autonumber", scope="Document"),
    _system("md5checksum__v", "MD5 Checksum", "ExactMatchString"),
    _system("filename__v", "File Name", "ExactMatchString"),
    _system("format__v", "Format", "ExactMatchString"),
    _system("size__v", "Size (KB)", "Number"),
    field("name__v", "Name", required=True, max_length=100),
    _system("type__v", "Type", required=True, system=True, set_on_create_only=True),
    _system("subtype__v", "Subtype", required=True, set_on_create_only=True),
    _system("classification__v", "Classification", required=True, set_on_create_only=True),
    _system("lifecycle__v", "Lifecycle", required=True, set_on_create_only=True),
    # Editable per the spec, but only when a document is created (migration of
    # numbering); later versions are numbered by the server.
    field(
        "major_version_number__v",
        "Major Version",
        "Number",
        required=True,
        set_on_create_only=True,
        system=True,
        default=[0],
    ),
    field(
        "minor_version_number__v",
        "Minor Version",
        "Number",
        required=True,
        set_on_create_only=True,
        system=True,
        default=[1],
    ),
    field("title__v", "Title", max_length=1500),
    field("description__v", "Description", max_length=1500),
    field(
        "language__v",
        "Language",
        "Picklist",
        repeating=True,
        entries=["English", "French", "German", "Spanish", "Japanese"],
    ),
    field("status__v", "Status", system=True),
    _system("locked__v", "Locked", "Boolean", scope="Document"),
    _system("binder__v", "Binder", "Boolean", scope="Document"),
    _system("crosslink__v", "CrossLink", "Boolean", scope="Document"),
    field("country__v", "Country", "ObjectReference", repeating=True, object_type="country__v"),
    field("product__v", "Product", "ObjectReference", repeating=True, object_type="product__v"),
    _system(
        "created_by__v", "Created By", "ObjectReference", object_type="user__sys", scope="Document"
    ),
    _system(
        "version_created_by__v", "Version Created By", "ObjectReference", object_type="user__sys"
    ),
    _system("last_modified_by__v", "Last Modified By", "ObjectReference", object_type="user__sys"),
    _system("document_creation_date__v", "Created Date", "DateTime", scope="Document"),
    _system("version_creation_date__v", "Version Created Date", "DateTime"),
    _system("version_modified_date__v", "Last Modified Date", "DateTime"),
    _system("owner__v", "Owner", "ObjectReference", help_content=_ROLE_HELP, scope="Document"),
    _system("viewer__v", "Viewer", "ObjectReference", help_content=_ROLE_HELP, scope="Document"),
    _system("editor__v", "Editor", "ObjectReference", help_content=_ROLE_HELP, scope="Document"),
]


def is_list(spec: FieldSpec) -> bool:
    """Values of repeating fields and of picklists are arrays in records."""
    return bool(spec.get("repeating")) or spec["type"] == "Picklist"


def parse_value(spec: FieldSpec, text: str) -> Any:
    """The stored value of ``text`` for the field, or InvalidData naming the field."""
    name, type_ = spec["name"], spec["type"]
    if is_list(spec):
        items = [item.strip() for item in text.split(",") if item.strip()]
        if len(items) > 1 and not spec.get("repeating"):
            raise InvalidData(f"Invalid value for [{name}]: the field takes one value")
        return [_parse_one(spec, item) for item in items]
    value = _parse_one(spec, text)
    max_length = spec.get("maxLength")
    if type_ == "String" and max_length is not None and len(value) > max_length:
        raise InvalidData(f"Invalid value for [{name}]: longer than {max_length} characters")
    return value


def _parse_one(spec: FieldSpec, text: str) -> Any:
    name, type_ = spec["name"], spec["type"]
    try:
        if type_ == "Number":
            number = float(text)
            return int(number) if number.is_integer() else number
        if type_ == "Boolean":
            lowered = text.strip().lower()
            if lowered not in ("true", "false"):
                raise ValueError(text)
            return lowered == "true"
        if type_ == "Date":
            return datetime.strptime(text.strip(), "%Y-%m-%d").strftime("%Y-%m-%d")
    except ValueError:
        raise InvalidData(f"Invalid value for [{name}]: '{text}' is not a {type_}") from None
    if type_ == "Picklist":
        entries: list[str] = spec.get("entryLabels", [])
        for entry in entries:
            if text.strip().lower() == entry.lower():
                return entry
        raise InvalidData(
            f"Invalid value for [{name}]: '{text}' is not one of {', '.join(entries)}"
        )
    return text
