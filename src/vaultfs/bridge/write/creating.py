"""New documents: a file written into a type, subtype or classification folder.

Owns turning a folder and a file into the fields of a create request: the name (from
the file name without its extension, or from the directory made with mkdir), the
type, subtype and classification (from the folder), the lifecycle (the first of the
leaf's ``availableLifecycles``) and every other required field from its metadata
default, or from what the user gave (``new_fields``). A required field that none of
these gives makes the create wait before any call changes the vault: the file stays
a pending new document (``new_documents``). The create itself is a job of the spool's
queue (``spool.creates``): sent exactly once in effect, and kept in the queue while the
vault is away. Whatever else fails, the content is moved to the spool's lost+found:
nothing a user wrote is dropped, and no half-made document is left.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from vaultfs import errors
from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import source_key
from vaultfs.bridge.tree import nodes
from vaultfs.bridge.tree.keys import FolderKey, typed
from vaultfs.bridge.tree.nodes import NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.spool.creates import MARKER_FIELD
from vaultfs.bridge.write.spool.queue import may_pass

if TYPE_CHECKING:
    from vaultfs.bridge.write.spool.spool import Spool

__all__ = ["MARKER_FIELD", "Creator", "show_created"]

log = logging.getLogger(__name__)


def _text(default: Any) -> str:
    """A metadata default (a list of values) as the text a form sends."""
    values = default if isinstance(default, list) else [default]
    return ",".join(str(v) for v in values)


async def show_created(tree: Tree, doc_id: int, record: dict[str, object] | None) -> None:
    """Show a document the spool's queue created (after its close's tries): its record
    as a look for its marker found it, or read (one call)."""
    if record is not None:
        tree.index.put(record)
    else:
        await tree.reload(doc_id)


class Creator:
    def __init__(self, tree: Tree, blobs: BlobCache, spool: Spool) -> None:
        self.tree = tree
        self.blobs = blobs
        self.spool = spool

    async def missing(self, folder: NodeKey, name: str, given: dict[str, str]) -> list[str]:
        """The required fields a create of ``name`` in ``folder`` would lack."""
        return (await self._fields(folder, name, given))[1]

    async def create(
        self, folder: NodeKey, name: str, filename: str, content: Path, given: dict[str, str]
    ) -> int:
        """Create document ``name`` in ``folder`` with ``content`` as ``filename`` and
        the fields the user ``given``; returns its id once the index knows it.

        A create that lacks fields or values (``PARAMETER_REQUIRED``, ``INVALID_DATA``,
        from here or from the vault) raises and leaves the content where it is: the
        user can still supply them. A failure that may pass (the vault away) leaves the
        create in the spool's queue, which makes it later; on any other the content is
        in lost+found. Either way the error is raised."""
        size = (await trio.Path(content).stat()).st_size
        fields, missing = await self._fields(folder, name, given)
        if missing:
            raise errors.ParameterRequired.naming(missing)
        try:
            doc_id = await self.spool.creates.create(
                fields, filename, content, on_found=self.tree.index.put
            )
        except (errors.ParameterRequired, errors.InvalidData):
            raise
        except errors.VaultError as exc:
            if not may_pass(exc):
                await self.spool.keep_lost(content, filename, exc)
            raise
        log.info("created document %d %r in %s", doc_id, name, nodes.folder_path(folder))
        try:
            await self.tree.reload(doc_id)
            # Only a size that held during the whole upload is the content's (a writer
            # may append meanwhile: a draft of what it wrote follows, ``new_documents``).
            if (await trio.Path(content).stat()).st_size == size:
                key = source_key(doc_id, self.tree.record(doc_id))
                self.blobs.remember_size(key, size)
        except errors.VaultError as exc:  # it exists; the next poll shows it
            log.warning("reading new document %d failed: %s", doc_id, exc)
        return doc_id

    async def _fields(
        self, folder: NodeKey, name: str, given: dict[str, str]
    ) -> tuple[dict[str, str], list[str]]:
        """The fields of a create, and the required ones nothing could give."""
        catalog = self.tree.catalog
        folder = typed(folder)
        if not isinstance(folder, FolderKey) or not folder.labels:
            raise errors.OperationNotPermitted(
                f"documents are made in type folders, not {folder!r}"
            )
        type_label, *below = folder.labels
        type_name = await self.tree.type_api_name(type_label)
        fields = {"name__v": name, "type__v": type_name}
        subtype = classification = None
        if below:  # a subtype's folder, or a classification's
            subtype = _api_name(await catalog.subtype_labels(type_name), below[0])
            fields["subtype__v"] = subtype
        if len(below) > 1:  # a classification's folder
            labels = await catalog.classification_labels(type_name, str(subtype))
            classification = _api_name(labels, below[1])
            fields["classification__v"] = classification
        leaf = await catalog.leaf(type_name, subtype, classification)
        fields.update(given)
        missing: list[str] = []
        if leaf.get("subtypes"):
            missing.append("subtype__v")
        elif leaf.get("classifications"):
            missing.append("classification__v")
        lifecycles = [lc.get("name") for lc in leaf.get("availableLifecycles") or []]
        if "lifecycle__v" in fields:
            pass
        elif lifecycles and lifecycles[0]:
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
        return fields, missing


def _api_name(labels: dict[str, str], value: str) -> str:
    """The API name of a folder that shows ``value`` (a label or an API name)."""
    if value in labels:
        return value
    return next((api for api, label in labels.items() if label == value), value)
