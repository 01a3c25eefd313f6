"""What the mount answers to desktop conventions (freedesktop.org, GNOME).

Owns the names a desktop's trash uses at the top of a mount: GIO's trash (``gio
trash``, a file manager's Delete) moves a file into ``.Trash/<uid>`` or ``.Trash-<uid>``
at the top of its file system, made on first use. The mount has no trash: a document
moved there would have to leave the vault's tree, and the vault's delete is no trash
(nothing in the mount restores it). Making such a directory is refused, so a trash
changes nothing, and the file manager offers to delete at once instead.
"""

from __future__ import annotations

import re

__all__ = ["is_trash_name"]

#: ``.Trash`` (an administrator's trash, one directory per user) and ``.Trash-<uid>``
_TRASH = re.compile(r"\.Trash(-\d+)?")


def is_trash_name(name: str) -> bool:
    """Whether ``name``, at the top of the mount, is a desktop trash directory."""
    return _TRASH.fullmatch(name) is not None
