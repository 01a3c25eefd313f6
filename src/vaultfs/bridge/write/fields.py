"""Changing fields through extended attributes: ``setfattr``/``setxattr`` and
``removexattr`` of ``user.vault.<field>``; and a document's name, when its directory
is renamed in its folder.

Owns the rules (docs/bridge.md): a field the vault marks editable (and not settable
on create only) is updated with one PUT of the document or of that version; any other
known field is refused with EPERM before a call is made; a name that is not a field
of the record nor of the vault's field metadata is ENOTSUP, as is any xattr outside
``user.vault.``. Setting the value a field already has makes no call. The set itself
is a job of the spool's queue (``spool.field_sets``): sent at once, and kept while the
vault is away, ``getfattr`` showing the value waiting (``shown``); once the vault has
it the record is read again so ``getfattr`` shows the vault's value.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from vaultfs import errors
from vaultfs.bridge.tree import xattrs
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.tree.versions import latest_version
from vaultfs.bridge.write.spool.field_sets import FieldSets
from vaultfs.client import VaultApi

__all__ = ["FieldEditor", "show_field_set"]

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


async def show_field_set(tree: Tree, doc_id: int, of_version: bool) -> None:
    """Show a field the vault took: the document's details are read again (one call;
    a version other than the latest is read when next asked for)."""
    tree.invalidate(doc_id)
    if not of_version:
        await tree.reload(doc_id)


class FieldEditor:
    def __init__(self, tree: Tree, client: VaultApi, sets: FieldSets | None) -> None:
        """``sets``: the spool's field sets (None: a read-only mount)."""
        self.tree = tree
        self.client = client
        self.sets = sets

    def shown(
        self, doc_id: int, version: tuple[int, int] | None, record: dict[str, Any]
    ) -> dict[str, Any]:
        """The fields ``getfattr`` shows of ``doc_id`` (of ``version``, None: the
        latest): ``record`` with the values waiting for the vault."""
        return record if self.sets is None else self.sets.shown(doc_id, version, record)

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
        try:
            specs: dict[str, dict[str, Any]] | None = await self.tree.catalog.fields()
        except errors.VaultUnavailable:
            # Away, and never read here: a field the document has is taken, and the
            # vault checks it when it is back (a refusal then is kept in lost+found).
            specs = None
        spec = specs.get(field) if specs is not None else None
        if spec is None and field not in record:
            raise errors.Unsupported(f"{field} is not a field of this vault")
        if specs is not None and (
            spec is None or not spec.get("editable") or spec.get("setOnCreateOnly")
        ):
            raise errors.NotEditable(f"{field} is not editable")
        if value is not None and value == xattrs.value_of(record.get(field)):
            return  # nothing changes: no call (editors copy xattrs back when they save)
        if value is None and record.get(field) in (None, [], ""):
            return
        text = None if value is None else form_value(value)
        if self.sets is None:
            raise errors.ReadOnly("this mount has no write-back spool")
        if version is not None and version == latest_version(self.tree.record(doc_id)):
            version = None  # the latest is set through the document
        await self.sets.set(doc_id, version, field, text)

    async def rename(self, doc_id: int, name: str) -> None:
        """A document's new name (``name__v``: its directory renamed in its folder);
        the record is read again at once."""
        await self.client.update_document(doc_id, {"name__v": name})
        self.tree.invalidate(doc_id)
        await self.tree.reload(doc_id)
