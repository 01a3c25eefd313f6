"""Changing fields through extended attributes: ``setfattr``/``setxattr`` and
``removexattr`` of ``user.vault.<field>``; and a document's name, when its directory
is renamed in its folder.

Owns the rules (docs/bridge.md): a field the vault marks editable (and not settable
on create only) is updated with one PUT of the document or of that version; any other
known field is refused with EPERM before a call is made; a name that is not a field
of the record nor of the vault's field metadata is ENOTSUP, as is any xattr outside
``user.vault.``. Setting the value a field already has makes no call. Afterwards the
record is read again so ``getfattr`` shows the vault's value at once.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from vaultfs import errors
from vaultfs.bridge.tree import xattrs
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.tree.versions import latest_version
from vaultfs.client import VaultApi

__all__ = ["FieldEditor"]

log = logging.getLogger(__name__)


def form_value(value: bytes) -> str:
    """The text a form sends for an xattr value: JSON arrays (what getfattr shows for
    repeating fields and picklists) become the comma-separated list the API takes."""
    try:
        text = value.decode()
    except UnicodeDecodeError:
        raise errors.InvalidData("field values are UTF-8 text") from None
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError:
            return text
        if isinstance(items, list):
            return ",".join(str(item) for item in items)
    return text


class FieldEditor:
    def __init__(self, tree: Tree, client: VaultApi) -> None:
        self.tree = tree
        self.client = client

    async def set(
        self,
        doc_id: int | None,
        version: tuple[int, int] | None,
        record: dict[str, Any],
        name: str,
        value: bytes | None,
    ) -> None:
        """Set field ``name`` (an xattr name) of document ``doc_id`` (of its
        ``version``; None: the latest), whose fields are ``record``; ``value`` None
        clears it. ``doc_id`` None: a node that shows no record's fields."""
        field = xattrs.field_of(name)
        if field is None or doc_id is None:
            raise errors.Unsupported(f"{name} is not a field")
        specs = await self.tree.catalog.fields()
        spec = specs.get(field)
        if spec is None and field not in record:
            raise errors.Unsupported(f"{field} is not a field of this vault")
        if spec is None or not spec.get("editable") or spec.get("setOnCreateOnly"):
            raise errors.NotEditable(f"{field} is not editable")
        if value is not None and value == xattrs.value_of(record.get(field)):
            return  # nothing changes: no call (editors copy xattrs back when they save)
        if value is None and record.get(field) in (None, [], ""):
            return
        text = None if value is None else form_value(value)
        client = self.client
        if version is not None:
            major, minor = version
            if version != latest_version(self.tree.record(doc_id)):
                await client.update_version(doc_id, major, minor, {field: text})
                self.tree.invalidate(doc_id)
                return
        await client.update_document(doc_id, {field: text})
        log.info("document %d: %s set", doc_id, field)
        self.tree.invalidate(doc_id)
        await self.tree.reload(doc_id)

    async def rename(self, doc_id: int, name: str) -> None:
        """A document's new name (``name__v``: its directory renamed in its folder);
        the record is read again at once."""
        await self.client.update_document(doc_id, {"name__v": name})
        self.tree.invalidate(doc_id)
        await self.tree.reload(doc_id)
