"""A folder's listing read from the index a page at a time, never held whole.

Owns the names of a folder of the type hierarchy (its child folders and its
documents) as ``filenames`` makes them, computed from the index's ``folder_names``
index as they are asked for: a page of the listing is a seek and a page of rows, a name
looked up is a seek. A folder of a million documents costs no memory per document, and
the last page of its listing as much as the first.

The documents come by name, then id: the documents that share a name (with each other,
or with a child folder) are next to each other, and are named together
(``assign_names`` over that group alone, with the child folders of that name); a
document whose name no other entry has keeps it as it is (escaped, cut to 255 bytes).
So a name is the same listed or looked up, and the same as ``assign_names`` would give
over the whole folder, but for one case it leaves aside: a `` [id]`` name a cut would
collide with (a label of more than 245 bytes ending in `` [digits]``).

A document without a name is listed by its id (``str(id)``), as the tree always did.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain, groupby
from operator import itemgetter

from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.filenames import (
    MAX_NAME_BYTES,
    Sibling,
    assign_names,
    single_name,
    single_names,
    unescape,
)
from vaultfs.bridge.tree.index_store import Folder, IndexStore
from vaultfs.bridge.tree.keys import DocumentKey, NodeKey

__all__ = ["PAGE", "FolderListing", "name_in"]

#: documents read from the index per query of a listing
PAGE = 512
#: a document's name made unique by its id (documents are directories: no extension)
_SUFFIXED = re.compile(r"(.*) \[([0-9]+)\]")
#: a name longer than this many characters may have been cut (255 bytes, 4 per character)
_MAY_BE_CUT = MAX_NAME_BYTES // 4


class FolderListing(Mapping[str, NodeKey]):
    """Name -> key of a folder's entries: its child folders (given, few), then its
    documents (read from ``store`` as asked for)."""

    def __init__(
        self, store: IndexStore, folder: Folder, subfolders: Sequence[tuple[str, NodeKey]]
    ) -> None:
        """``subfolders``: (label, key) of the child folders, named here."""
        self._store = store
        self._folder = folder
        siblings = [Sibling(label, str(key[-1]), (0, str(key[-1]))) for label, key in subfolders]
        children: list[NodeKey] = [key for _, key in subfolders]
        for label in {label for label, _ in subfolders}:
            for doc_id in self._labelled(label):
                siblings.append(_document(label, doc_id))
                children.append(keys.document(doc_id))
        named = dict(zip(assign_names(siblings), children, strict=True))
        #: the child folders by name
        self._folders = {n: k for n, k in named.items() if not isinstance(k, DocumentKey)}
        #: the labels of child folders, and the names of the documents that share one
        self._folder_labels = {label for label, _ in subfolders}
        self._beside_folders = {k[1]: n for n, k in named.items() if isinstance(k, DocumentKey)}

    # --- the mapping -----------------------------------------------------------------

    def __getitem__(self, name: str) -> NodeKey:
        found = self._folders.get(name)
        if found is not None:
            return found
        if not name.isascii():
            try:
                name.encode()
            except UnicodeEncodeError:  # not UTF-8 (a name a program made): no label is
                raise KeyError(name) from None
        for label in self._labels_named(name):
            for doc_id, doc_name in self._names(label).items():
                if doc_name == name:
                    return keys.document(doc_id)
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.items())

    def __len__(self) -> int:
        return len(self._folders) + self._store.count_in(self._folder)

    def items(self) -> Iterator[tuple[str, NodeKey]]:  # type: ignore[override]
        """The entries: the child folders, then the documents a page at a time."""
        yield from self._folders.items()
        after: tuple[str, int] | None = None
        while rows := self._store.names_after(self._folder, after, PAGE):
            last = rows[-1][1]
            if len(rows) == PAGE and last:  # (unnamed documents are each alone)
                # The last name may go on in the next page: read it from there, so that
                # a page holds whole groups; a page of one name is read whole.
                end = len(rows)
                while end and rows[end - 1][1] == last:
                    end -= 1
                rows = rows[:end] or [(i, last) for i in self._store.named(self._folder, last)]
            yield from self._page_entries(rows)
            after = (rows[-1][1], rows[-1][0])

    def values(self) -> Iterator[NodeKey]:  # type: ignore[override]
        return (key for _, key in self.items())

    # --- beyond a mapping ------------------------------------------------------------

    def name_of(self, child: NodeKey) -> str | None:
        """The name ``child`` has here (None: not in this folder). A seek, not a scan."""
        if not isinstance(child, DocumentKey):
            return next((n for n, k in self._folders.items() if k == child), None)
        doc_id = child.doc_id
        place = self._store.place(doc_id)
        if place is None or place[0] != self._folder:
            return None
        return self._names(place[1] or str(doc_id)).get(doc_id)

    # --- naming ----------------------------------------------------------------------

    def _page_entries(self, rows: list[tuple[int, str]]) -> Iterable[tuple[str, NodeKey]]:
        """The entries of a page of whole groups of ``rows`` (id, name)."""
        labels = [name for _, name in rows]
        if (
            len(set(labels)) == len(labels)
            and all(labels)
            and self._folder_labels.isdisjoint(labels)
            and not any(map(str.isdigit, labels))  # (an unnamed document's id could be it)
        ):
            # The usual page: every name is its document's alone, made in a few passes
            # (a folder of 100,000 documents is listed in a few tenths of a second).
            ids = [i for i, _ in rows]
            return zip(single_names(labels), keys.documents(ids), strict=True)
        return chain.from_iterable(
            self._group_entries(name, [i for i, _ in group])
            for name, group in groupby(rows, itemgetter(1))
        )

    def _group_entries(self, name: str, ids: list[int]) -> Iterator[tuple[str, NodeKey]]:
        if not name:  # documents without a name: each is listed by its id
            for doc_id in ids:
                yield self._names(str(doc_id))[doc_id], keys.document(doc_id)
            return
        if len(ids) == 1 and name not in self._folder_labels and not name.isdigit():
            # The name no other entry has (an unnamed document's id could be it).
            yield single_name(name), keys.document(ids[0])
            return
        names = self._names(name)
        for doc_id in ids:
            yield names[doc_id], keys.document(doc_id)

    def _labelled(self, label: str) -> list[int]:
        """The documents listed under ``label``: named so, or unnamed with that id."""
        found = self._store.named(self._folder, label)
        if label.isdigit() and self._store.place(int(label)) == (self._folder, ""):
            found = sorted([*found, int(label)])
        return found

    def _names(self, label: str) -> dict[int, str]:
        """id -> name of the documents listed under ``label``."""
        if label in self._folder_labels:
            beside = self._beside_folders
            return {i: beside[i] for i in self._labelled(label) if i in beside}
        ids = self._labelled(label)
        if len(ids) == 1:
            return {ids[0]: single_name(label)}
        return dict(zip(ids, assign_names([_document(label, i) for i in ids]), strict=True))

    def _labels_named(self, name: str) -> list[str]:
        """The labels whose documents may be named ``name`` here."""
        labels = [unescape(name)]
        suffixed = _SUFFIXED.fullmatch(name)
        if suffixed is not None:
            labels.append(unescape(suffixed[1]))
        if len(name) > _MAY_BE_CUT:
            labels += [label for _, label in self._store.long_names(self._folder, _MAY_BE_CUT)]
        return labels


def _document(label: str, doc_id: int) -> Sibling:
    return Sibling(label, str(doc_id), (1, f"{doc_id:020d}"))


def name_in(listing: Mapping[str, NodeKey], child: NodeKey) -> str | None:
    """The name of ``child`` in ``listing`` (None: not in it): a seek in a listing that
    can tell (``name_of``: a folder's), a scan of a small one."""
    name_of = getattr(listing, "name_of", None)
    if name_of is not None:
        found: str | None = name_of(child)
        return found
    return next((name for name, key in listing.items() if key == child), None)
