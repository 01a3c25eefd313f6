"""New documents: a file written into a type, subtype or classification folder.

Owns turning a folder and a file into the fields of a create request: the name (from
the file name without its extension, or from the directory made with mkdir), the
type, subtype and classification (from the folder), the lifecycle (the first of the
leaf's ``availableLifecycles``) and every other required field from its metadata
default. A required field that cannot be derived makes the create fail before any
call changes the vault (``PARAMETER_REQUIRED`` -> EINVAL, with a log line naming the
field). Whatever fails, the content is moved to the spool's lost+found: nothing a user
wrote is dropped, and no half-made document is left.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from vaultfs import errors
from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import content_of
from vaultfs.bridge.tree.nodes import Kind, NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.spool import store as spool_store
from vaultfs.client import VaultClient

if TYPE_CHECKING:
    from vaultfs.bridge.write.spool.spool import Spool

__all__ = ["Creator"]

log = logging.getLogger(__name__)


def _text(default: Any) -> str:
    """A metadata default (a list of values) as the text a form sends."""
    values = default if isinstance(default, list) else [default]
    return ",".join(str(v) for v in values)


class Creator:
    def __init__(self, tree: Tree, client: VaultClient, blobs: BlobCache, spool: Spool) -> None:
        self.tree = tree
        self.client = client
        self.blobs = blobs
        self.spool = spool

    async def create(self, folder: NodeKey, name: str, filename: str, content: Path) -> int:
        """Create document ``name`` in ``folder`` with ``content`` as ``filename``;
        returns its id once the index knows it. On failure the content is in
        lost+found and the error is raised."""
        size = (await trio.Path(content).stat()).st_size
        try:
            fields = await self._fields(folder, name)
            doc_id = await self._send(fields, filename, content)
        except errors.VaultError as exc:
            await self.spool.keep_lost(content, filename, exc)
            raise
        log.info("created document %d %r in %r", doc_id, name, folder)
        try:
            await self.tree.reload(doc_id)
            self.blobs.remember_size((await content_of(self.tree, (Kind.SRC, doc_id))).key, size)
        except errors.VaultError as exc:  # it exists; the next poll shows it
            log.warning("reading new document %d failed: %s", doc_id, exc)
        return doc_id

    async def _send(self, fields: dict[str, str], filename: str, content: Path) -> int:
        named = spool_store.upload_name(content, filename)  # a link: quick
        try:
            return await self.client.create_document(fields, named)
        finally:
            spool_store.drop_upload_name(content)

    async def _fields(self, folder: NodeKey, name: str) -> dict[str, str]:
        catalog = self.tree.catalog
        kind = folder[0]
        type_name = await self.tree.type_api_name(str(folder[1]))
        fields = {"name__v": name, "type__v": type_name}
        subtype = classification = None
        if kind in (Kind.SUB, Kind.CLS):
            subtype = _api_name(await catalog.subtype_labels(type_name), str(folder[2]))
            fields["subtype__v"] = subtype
        if kind == Kind.CLS:
            labels = await catalog.classification_labels(type_name, str(subtype))
            classification = _api_name(labels, str(folder[3]))
            fields["classification__v"] = classification
        leaf = await catalog.leaf(type_name, subtype, classification)
        missing: list[str] = []
        if leaf.get("subtypes"):
            missing.append("subtype__v")
        elif leaf.get("classifications"):
            missing.append("classification__v")
        lifecycles = [lc.get("name") for lc in leaf.get("availableLifecycles") or []]
        if lifecycles and lifecycles[0]:
            fields["lifecycle__v"] = str(lifecycles[0])
        else:
            missing.append("lifecycle__v")
        for spec in leaf.get("properties") or []:
            field = spec.get("name")
            if not spec.get("required") or spec.get("systemAttribute") or field in fields:
                continue
            if spec.get("defaultValue") not in (None, []):
                fields[field] = _text(spec["defaultValue"])
            else:
                missing.append(str(field))
        if missing:
            log.error(
                "cannot create %r in %r: required field(s) %s cannot be derived from the "
                "folder or the type's defaults",
                name,
                folder,
                ", ".join(missing),
            )
            raise errors.ParameterRequired(
                "required field(s) without a default: " + ", ".join(missing)
            )
        return fields


def _api_name(labels: dict[str, str], value: str) -> str:
    """The API name of a folder that shows ``value`` (a label or an API name)."""
    if value in labels:
        return value
    return next((api for api, label in labels.items() if label == value), value)
