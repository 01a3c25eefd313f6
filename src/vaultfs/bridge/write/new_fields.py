"""Fields of documents not made yet: what a user supplies for new files.

A new file in a folder becomes a document when its last writer closes it, if every
field the type requires can be given (``creating``). When one cannot, the file stays
in the folder as a *pending new document* and the user supplies the rest through
extended attributes, before or after the first close:

* ``setfattr -n user.vault.<field> -v VALUE new.txt`` on the new file itself;
* ``setfattr -n user.vault.default.<field> -v VALUE Folder/`` on a type, subtype or
  classification folder: a default for every new file below it (for this mount's
  life; the nearest folder wins);
* ``getfattr -n user.vault.missing_fields new.txt``: what is still missing (JSON).

Owns those values and their xattr view; when the document is made is
``new_documents``' decision (it asks ``given`` and retries the create after a change).
"""

from __future__ import annotations

from typing import Any

from vaultfs import errors
from vaultfs.bridge.tree import xattrs
from vaultfs.bridge.tree.keys import FolderKey, typed
from vaultfs.bridge.tree.nodes import FOLDERS, NodeKey
from vaultfs.bridge.write.fields import form_value
from vaultfs.bridge.write.scratch import ScratchFile

__all__ = ["MISSING", "NewFields"]

#: the xattr (under ``user.vault.``) listing a pending document's missing fields
MISSING = "missing_fields"
_DEFAULT = "default."


def _ancestors(folder: NodeKey) -> list[FolderKey]:
    """``("cls", t, s, c)`` -> the type, subtype and classification folders, outermost
    first (a mkdir'd folder's files take the folder they were made in)."""
    folder = typed(folder)
    return folder.ancestors if isinstance(folder, FolderKey) else []


class NewFields:
    def __init__(self) -> None:
        #: folder -> field -> default text for new files below it
        self._defaults: dict[NodeKey, dict[str, str]] = {}

    def given(self, folder: NodeKey, scratch: ScratchFile) -> dict[str, str]:
        """Every field the user supplied for a new file in ``folder``: the folders'
        defaults, nearest last, then the file's own."""
        fields: dict[str, str] = {}
        for ancestor in _ancestors(folder):
            fields.update(self._defaults.get(ancestor, {}))
        return {**fields, **scratch.fields}

    # --- the xattr view ----------------------------------------------------------

    def of_folder(self, folder: NodeKey) -> dict[str, Any]:
        return {_DEFAULT + k: v for k, v in self._defaults.get(folder, {}).items()}

    @staticmethod
    def of_file(scratch: ScratchFile) -> dict[str, Any]:
        shown: dict[str, Any] = dict(scratch.fields)
        if scratch.missing is not None:
            shown[MISSING] = list(scratch.missing)
        return shown

    def set(
        self, key: NodeKey, scratch: ScratchFile | None, name: str, value: bytes | None
    ) -> None:
        """``setfattr``/``removexattr`` on a folder (defaults) or a new file."""
        field = xattrs.field_of(name)
        if field is None:
            raise errors.Unsupported(f"{name} is not a field")
        text = None if value is None else form_value(value)
        if typed(key).kind in FOLDERS and field.startswith(_DEFAULT) and len(field) > len(_DEFAULT):
            target = self._defaults.setdefault(key, {})
            field = field[len(_DEFAULT) :]
        elif scratch is not None and field != MISSING:
            target = scratch.fields
        else:
            raise errors.Unsupported(f"{name} cannot be set here")
        if text is None:
            target.pop(field, None)
        else:
            target[field] = text
