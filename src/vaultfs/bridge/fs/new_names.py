"""Names a user gives new entries, refused at once when the vault cannot take them.

Owns the checks made when a name is made (create, mkdir, the target of a rename, a
symbolic link), before anything is listed or spooled, so that a program is told at
open() or mkdir() rather than at close(), and nothing is left listed that can never
reach the vault (docs/bridge.md, "Names the mount refuses"):

* bytes that are not UTF-8 (``os.fsdecode`` made surrogates of them): the vault's
  names are text, so such a name cannot be sent: EINVAL;
* longer than 255 bytes (``MAX_NAME_BYTES``, what ``statfs`` reports as the longest
  name, and what a local file system takes): ENAMETOOLONG. The kernel leaves this
  check to FUSE file systems (it passes names of up to 1024 bytes);
* a new document whose ``name__v`` (the file name without its extension, or the
  name of a directory made in a folder) is longer than that field's ``maxLength``:
  ENAMETOOLONG. The limit comes from the type metadata the mount has read already
  (no call is made at create); 100 characters, the vault's usual one, until then.

Each refusal is logged with the name and the limit.
"""

from __future__ import annotations

import logging

from vaultfs import errors
from vaultfs.bridge.tree.catalog import TypeCatalog
from vaultfs.bridge.tree.filenames import MAX_NAME_BYTES, unescape
from vaultfs.bridge.tree.keys import typed
from vaultfs.bridge.tree.nodes import FOLDERS, NodeKey
from vaultfs.bridge.write.scratch import makes_document, new_document_name

__all__ = ["DEFAULT_NAME_LENGTH", "MAX_NAME_BYTES", "NameRules"]

log = logging.getLogger(__name__)

#: the field a new document's name goes to
NAME_FIELD = "name__v"
#: its maxLength while the metadata that says it has not been read
DEFAULT_NAME_LENGTH = 100


class NameRules:
    def __init__(self, catalog: TypeCatalog) -> None:
        self._catalog = catalog

    def check(self, parent: NodeKey, name: str, *, directory: bool) -> None:
        """Refuse ``name`` for a new entry in ``parent`` (a directory when
        ``directory``) when the mount or the vault cannot take it."""
        try:
            size = len(name.encode("utf-8"))
        except UnicodeEncodeError:
            shown = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            log.warning("new name %r refused: it is not valid UTF-8 (EINVAL)", shown)
            raise errors.InvalidName(f"{shown!r}: a vault name must be valid UTF-8") from None
        if size > MAX_NAME_BYTES:
            log.warning(
                "new name %r refused: %d bytes, longer than the %d a name may have",
                name, size, MAX_NAME_BYTES,
            )  # fmt: skip
            raise errors.NameTooLong(f"{size} bytes: a name has at most {MAX_NAME_BYTES}")
        if typed(parent).kind not in FOLDERS:
            return  # only a folder's new entries become documents
        if directory:
            document = unescape(name)
        elif makes_document(parent, name):
            document = new_document_name(unescape(name))
        else:
            return
        limit = self._catalog.known_max_length(NAME_FIELD) or DEFAULT_NAME_LENGTH
        if len(document) > limit:
            log.warning(
                "new document %r refused: its %s would have %d characters, the vault "
                "takes at most %d",
                name, NAME_FIELD, len(document), limit,
            )  # fmt: skip
            raise errors.NameTooLong(
                f"{NAME_FIELD} {document!r} has {len(document)} characters; at most {limit}"
            )
