"""Making and removing relationships: ``ln -s`` and ``rm`` in ``relationships/<type>/``.

Owns what a new link means and what removing one does (the listing is
``tree.relationships``'). The decisions, written down for users in docs/bridge.md:

* ``ln -s TARGET <doc>/relationships/<type label>/[NAME]`` creates a relationship of
  that type from the document's latest version. TARGET is read relative to the link's
  directory (or, absolute, below the mount point) and must name a document's directory
  in the mount, or one of its ``versions/<M.m>`` directories; anything else, or a path
  that leaves the mount, is EINVAL. The version is sent when TARGET names one, and for a
  ``targetDocVersionSpecific`` type that TARGET does not pin, the target's latest.
  NAME is not kept: the link is listed under its target's name.
* Refusals, each with a log line: the same type and target exist already, or a
  ``singleUse`` type has one: EEXIST (checked here first, then by the vault); any other
  refusal of the vault's (target type not allowed, a version that does not exist):
  EINVAL; not allowed: EACCES (``vaultfs.errors``' table).
* ``rm`` of a link deletes the relationship (every source version's record of it). A
  relationship that is gone already counts as deleted.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from vaultfs import errors
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.keys import RelationshipKey, VersionKey, typed
from vaultfs.bridge.tree.link_targets import link_target
from vaultfs.bridge.tree.nodes import Kind, NodeKey
from vaultfs.bridge.tree.relationships import Link
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.tree.versions import latest_version
from vaultfs.client import VaultApi
from vaultfs.wire import format_datetime

__all__ = ["Linker"]

log = logging.getLogger(__name__)


class Linker:
    def __init__(self, tree: Tree, client: VaultApi, mountpoint: str = "") -> None:
        """``mountpoint``: where the mount is, for link targets given as absolute paths."""
        self._tree = tree
        self._client = client
        self._mountpoint = mountpoint.rstrip("/")

    # --- ln -s ---------------------------------------------------------------------

    async def symlink(self, parent: NodeKey, name: str, text: str) -> NodeKey:
        """Create the relationship a new link ``name`` -> ``text`` in ``parent`` stands
        for; returns the link's node."""
        if not isinstance(parent, RelationshipKey) or parent.kind != Kind.RELT:
            raise errors.OperationNotPermitted(
                "symbolic links are made in a document's relationships/<type>/ only"
            )
        doc_id, relationship_type = parent.doc_id, parent.relationship_type
        target = typed(await self._resolve(parent, text))
        # A document's directory, or one of its versions' (a link to that version).
        if target.kind not in (Kind.DOC, Kind.VER):
            raise self._refused(doc_id, text, errors.InvalidData("not a document's directory"))
        target_id = target.doc_id
        spec = await self._tree.relationships.type_spec(doc_id, relationship_type) or {}
        version = target.version if isinstance(target, VersionKey) else None
        if version is None and spec.get("targetDocVersionSpecific"):
            version = latest_version(self._tree.record(target_id))
        source = latest_version(self._tree.record(doc_id))
        if source is None:
            raise errors.InvalidDocument(f"document {doc_id} has no version")
        existing = await self._tree.relationships.links(doc_id, relationship_type)
        if any(link.target == target_id and link.target_version == version for link in existing):
            raise self._refused(doc_id, text, errors.AlreadyExists("this relationship exists"))
        if spec.get("singleUse") and any(
            _from(link, source) for link in existing
        ):  # one per source version: the latest's
            raise self._refused(
                doc_id, text, errors.AlreadyExists(f"{relationship_type} is single-use")
            )
        try:
            rel_id = await self._client.create_relationship(
                doc_id,
                *source,
                target=target_id,
                relationship_type=relationship_type,
                target_version=version,
            )
        except (errors.InvalidData, errors.ParameterRequired, errors.InsufficientAccess) as exc:
            raise self._refused(doc_id, text, exc) from None
        log.info(
            "document %d: %s relationship %d to document %d%s",
            doc_id,
            relationship_type,
            rel_id,
            target_id,
            " v{}.{}".format(*version) if version else "",
        )
        record: dict[str, object] = {
            "id": rel_id,
            "source_doc_id__v": doc_id,
            "source_major_version__v": source[0],
            "source_minor_version__v": source[1],
            "target_doc_id__v": target_id,
            "relationship_type__v": relationship_type,
            # the vault's answer has no date: now is within the call of it (the link's
            # mtime until the listing is read again)
            "created_date__v": format_datetime(datetime.now(UTC)),
        }
        if version is not None:
            record["target_major_version__v"], record["target_minor_version__v"] = version
        await self._learn(doc_id, add=[record])
        return keys.relationship_link(doc_id, rel_id)

    def _refused(self, doc_id: int, text: str, exc: errors.VaultError) -> errors.VaultError:
        log.warning("document %d: link to %r refused: %s", doc_id, text, exc.message)
        return exc

    async def _resolve(self, parent: RelationshipKey, text: str) -> NodeKey:
        """The node ``text`` names, read relative to directory ``parent``; EINVAL for a
        path that leaves the mount or names nothing."""
        doc_id, relationship_type = parent.doc_id, parent.relationship_type
        try:
            return await link_target(
                self._tree,
                text,
                self._mountpoint,
                lambda: self._tree.relationships.type_dir_path(doc_id, relationship_type),
            )
        except errors.InvalidData as exc:
            raise self._refused(doc_id, text, exc) from None

    # --- rm ------------------------------------------------------------------------

    async def unlink(self, parent: NodeKey, name: str) -> None:
        """Delete the relationship the link ``name`` in ``parent`` stands for."""
        key = await self._tree.lookup(parent, name)
        if key is None:
            raise errors.NotFound(name)
        if key.kind != Kind.RLINK:
            raise errors.IsADirectory(name)
        doc_id = key.doc_id
        link = await self._tree.relationships.link(key)
        gone: list[int] = []
        for record in link.records:
            rel_id = int(record["id"])
            major = int(record.get("source_major_version__v") or 0)
            minor = int(record.get("source_minor_version__v") or 0)
            try:
                await self._client.delete_relationship(doc_id, major, minor, rel_id)
            except errors.MalformedUrl:
                pass  # deleted by someone else meanwhile: what rm wanted
            except errors.InsufficientAccess as exc:
                raise self._refused(doc_id, name, exc) from None
            gone.append(rel_id)
        log.info("document %d: deleted %s relationship(s) %s", doc_id, link.relationship_type, gone)
        await self._learn(doc_id, remove=frozenset(gone))

    async def _learn(
        self,
        doc_id: int,
        add: list[dict[str, object]] | None = None,
        remove: frozenset[int] = frozenset(),
    ) -> None:
        """After a change: the document's record again (its modification date moved), and
        its relationships as this mount knows them now, without reading them all again."""
        records = [
            r for r in await self._tree.relationships.records(doc_id) if int(r["id"]) not in remove
        ]
        records += add or []
        await self._tree.reload(doc_id)
        self._tree.relationships.learned(doc_id, records)


def _from(link: Link, source: tuple[int, int]) -> bool:
    """Whether ``link`` has a record from source version ``source``."""
    return any(
        (int(r.get("source_major_version__v") or 0), int(r.get("source_minor_version__v") or 0))
        == source
        for r in link.records
    )
