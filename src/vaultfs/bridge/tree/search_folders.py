"""The search folders and the views: the vault's own search and named filters shown as
directories of symbolic links to document directories.

Owns these nodes (``nodes.QUERY_NODES``) and what they mean; the calls and how long
their answers are kept are ``search_results``'. The decisions, written down for users
in docs/bridge.md ("Search folders and views") and the user guide:

* ``.search/WORDS/`` lists the documents whose fields or file text (any version) hold
  every one of the words; ``.search/content/WORDS/`` those whose file text does;
  ``.search/all/WORDS/`` is ``.search/WORDS/`` for the words ``all`` and ``content``.
  ``.search`` is reachable by name and never listed at the root (like ``.vaultfs``), so
  ``find``, ``grep -r``, ``rsync`` and ``tar`` of the mount never walk it; ``.search``
  lists ``all`` and ``content``, which list nothing: any name in them is a search.
* Each document found is a symbolic link named like its directory (``filenames``
  rules among the results) pointing, relative to the link's folder, at the document's
  directory. Which versions matched is ``user.vault.search.versions`` on the search's
  folder, a JSON object: link name -> ``["0.1", "1.0"]`` (Linux allows ``user.``
  attributes on files and directories only, never on a symbolic link).
* The views ``Favorites``, ``My Documents`` and ``Recent Documents`` are folders at
  the root, listed (a file manager shows them), of links like a search's. A type whose
  label is a view's name keeps its name: that view is then ``<name> [view]``.
* ``ln -s TARGET Favorites/[NAME]`` marks the document TARGET names (its directory,
  relative to ``Favorites`` or absolute below the mount point) as a favourite (``POST
  /objects/documents/{id}/favorite``); ``rm Favorites/NAME`` unmarks it (``DELETE``). A
  vault without the favourite call: EOPNOTSUPP and a log line. Nothing else is written
  here: EPERM.
* Only documents the index holds are shown (the vault answers only what the user may
  see; a document created since the last poll shows after the next).
"""

from __future__ import annotations

import logging
import posixpath
from typing import Any, Protocol

from vaultfs import errors
from vaultfs.bridge.tree.filenames import Sibling, assign_names
from vaultfs.bridge.tree.index import DocumentIndex, Record
from vaultfs.bridge.tree.nodes import ROOT, SEARCH_DIR, Kind, NodeKey
from vaultfs.bridge.tree.search_results import Answer, Hit, SearchResults
from vaultfs.client import VaultClient

__all__ = [
    "CONTENT_FORM",
    "FAVORITES",
    "VERSIONS_FIELD",
    "VIEWS",
    "SearchFolders",
    "view_names",
]

log = logging.getLogger(__name__)

#: ``.search/<form>/WORDS``: fields and file text, or the file text only
ALL_FORM = "all"
CONTENT_FORM = "content"
_FORMS = (ALL_FORM, CONTENT_FORM)
#: the views, by the named filter the vault knows them by (their folder's name)
FAVORITES = "Favorites"
VIEWS = (FAVORITES, "My Documents", "Recent Documents")
#: what a view's folder is called when a type took its name
VIEW_SUFFIX = " [view]"
#: the field-like xattr of a search's folder (``user.vault.search.versions``)
VERSIONS_FIELD = "search.versions"
#: what a vault without the favourite call answers
_NO_FAVORITES = (errors.MalformedUrl, errors.MethodNotSupported)


def view_names(taken: set[str]) -> dict[str, NodeKey]:
    """The views' folders at the root, beside the ``taken`` names of the types."""
    return {(name + VIEW_SUFFIX if name in taken else name): (Kind.VIEW, name) for name in VIEWS}


class TreeView(Protocol):
    """What this module asks of the tree that holds it (``tree.Tree``)."""

    index: DocumentIndex

    def record(self, doc_id: int) -> Record: ...

    async def children(self, key: NodeKey) -> dict[str, NodeKey]: ...

    async def lookup(self, key: NodeKey, name: str) -> NodeKey | None: ...

    async def document_path(self, doc_id: int) -> list[str]: ...


class SearchFolders:
    def __init__(self, tree: TreeView, client: VaultClient) -> None:
        self._tree = tree
        self._client = client
        self.results = SearchResults(client, lambda: tree.index.generation)

    # --- names -----------------------------------------------------------------------

    async def lookup(self, key: NodeKey, name: str) -> NodeKey | None:
        kind = key[0]
        if kind == Kind.SEARCH:
            if name in _FORMS:
                return (Kind.SEARCHES, name)
            return (Kind.QUERY, "", name) if name.split() else None
        if kind == Kind.SEARCHES:
            return (Kind.QUERY, str(key[1]), name) if name.split() else None
        return (await self.children(key)).get(name)

    async def children(self, key: NodeKey) -> dict[str, NodeKey]:
        kind = key[0]
        if kind == Kind.SEARCH:
            return {form: (Kind.SEARCHES, form) for form in _FORMS}
        if kind == Kind.SEARCHES:
            return {}  # every name is a search: reachable, never listed
        if kind in (Kind.QUERY, Kind.VIEW):
            return (await self._found(key))[0]
        raise errors.NotADirectory(f"{key!r} is not a directory")

    async def _answer(self, key: NodeKey) -> Answer:
        if key[0] == Kind.QUERY:
            words = str(key[2])
            return await self.results.search(words, content_only=key[1] == CONTENT_FORM)
        name = str(key[1])
        try:
            return await self.results.view(name)
        except errors.InvalidData as exc:  # a vault without that named filter
            log.warning("the view %s is empty: the vault has no such filter (%s)", name, exc)
            return Answer((), 0.0)

    async def _found(self, key: NodeKey) -> tuple[dict[str, NodeKey], dict[str, Hit]]:
        """(name -> link, name -> hit) of a search's folder or a view."""
        answer = await self._answer(key)
        hits = [h for h in answer.hits if self._tree.index.get(h.doc_id) is not None]
        siblings = [
            Sibling(
                str(self._tree.record(h.doc_id).get("name__v") or h.doc_id),
                str(h.doc_id),
                (0, f"{h.doc_id:020d}"),
            )
            for h in hits
        ]
        names = assign_names(siblings)
        link = Kind.QLINK if key[0] == Kind.QUERY else Kind.VLINK
        return (
            {n: (link, *key[1:], h.doc_id) for n, h in zip(names, hits, strict=True)},
            dict(zip(names, hits, strict=True)),
        )

    # --- what the nodes show -----------------------------------------------------------

    def answered(self, key: NodeKey) -> float | None:
        """When the answer a search's folder or a view lists was given (its mtime),
        None when none is kept."""
        if key[0] == Kind.QUERY:
            scope = "contents" if key[1] == CONTENT_FORM else "all"
            answer = self.results.kept("search", scope, str(key[2]))
        elif key[0] == Kind.VIEW:
            answer = self.results.kept("view", str(key[1]))
        else:
            return None
        return answer.when if answer is not None else None

    @staticmethod
    def writable(key: NodeKey) -> bool:
        """Whether names may be made in the directory (``Favorites`` only)."""
        return key == (Kind.VIEW, FAVORITES)

    async def fields(self, key: NodeKey) -> dict[str, Any]:
        """The xattrs of a search's folder: which versions of each document matched."""
        if key[0] != Kind.QUERY:
            return {}
        _, hits = await self._found(key)
        return {
            VERSIONS_FIELD: {
                name: [f"{major}.{minor}" for major, minor in hit.versions]
                for name, hit in hits.items()
            }
        }

    async def _folder_path(self, key: NodeKey) -> list[str]:
        """The names from the root to a link's folder."""
        if key[0] == Kind.QLINK:
            form = str(key[1])
            return [SEARCH_DIR, *([form] if form else []), str(key[2])]
        view: NodeKey = (Kind.VIEW, str(key[1]))
        root = await self._tree.children(ROOT)
        name = next((n for n, k in root.items() if k == view), None)
        if name is None:
            raise errors.NotFound(f"no view {key[1]!r}")
        return [name]

    async def link_text(self, key: NodeKey) -> str:
        """What a link reads: its document's directory, relative to the link's folder."""
        doc_id = int(key[-1])
        if self._tree.index.get(doc_id) is None:
            raise errors.NotFound(f"document {doc_id} is not in the tree")
        here = await self._folder_path(key)
        there = await self._tree.document_path(doc_id)
        return posixpath.relpath("/" + "/".join(there), "/" + "/".join(here))

    async def link_stat(self, key: NodeKey) -> tuple[int, str]:
        """(length of the link's text, its document's modification date)."""
        text = await self.link_text(key)
        record = self._tree.record(int(key[-1]))
        return len(text.encode()), str(record.get("version_modified_date__v") or "")

    # --- favourites --------------------------------------------------------------------

    async def symlink(self, parent: NodeKey, name: str, text: str, mountpoint: str) -> NodeKey:
        """``ln -s TEXT Favorites/NAME``: mark the document TEXT names."""
        if not self.writable(parent):
            raise errors.OperationNotPermitted("links are made in Favorites only")
        doc_id = await self._document_named(parent, text, mountpoint)
        await self._mark(doc_id, True)
        return (Kind.VLINK, FAVORITES, doc_id)

    async def unlink(self, parent: NodeKey, name: str) -> None:
        """``rm Favorites/NAME``: unmark that document; nothing else is removed here."""
        if not self.writable(parent):
            log.warning("%r not removed: a search's or a view's links are its answer", name)
            raise errors.OperationNotPermitted(f"{name} cannot be removed")
        key = (await self.children(parent)).get(name)
        if key is None:
            raise errors.NotFound(name)
        await self._mark(int(key[-1]), False)

    async def _mark(self, doc_id: int, favorite: bool) -> None:
        try:
            await self._client.set_favorite(doc_id, favorite)
        except _NO_FAVORITES as exc:
            log.warning(
                "Favorites cannot be changed: this vault has no favourite call "
                "(%s /objects/documents/{id}/favorite: %s)",
                "POST" if favorite else "DELETE",
                exc.message,
            )
            raise errors.Unsupported("this vault has no favourite call") from None
        log.info("document %d %s Favorites", doc_id, "added to" if favorite else "removed from")
        self.results.forget("view", FAVORITES)

    async def _document_named(self, parent: NodeKey, text: str, mountpoint: str) -> int:
        """The document whose directory ``text`` names, read relative to ``parent``
        (or absolute below ``mountpoint``); EINVAL for anything else."""
        if posixpath.isabs(text):
            prefix = mountpoint.rstrip("/") + "/"
            if not mountpoint or not text.startswith(prefix):
                raise self._refused(text, "outside the mount")
            parts = text[len(prefix) :].split("/")
        else:
            parts = [*await self._folder_path((Kind.VLINK, str(parent[1]), 0)), *text.split("/")]
        names: list[str] = []
        for part in parts:
            if part in ("", "."):
                continue
            if part == "..":
                if not names:
                    raise self._refused(text, "leaves the mount")
                names.pop()
            else:
                names.append(part)
        key: NodeKey | None = ROOT
        for part in names:
            assert key is not None
            key = await self._tree.lookup(key, part)
            if key is None:
                raise self._refused(text, "no such document")
        assert key is not None
        if key[0] != Kind.DOC:
            raise self._refused(text, "not a document's directory")
        return int(key[1])

    @staticmethod
    def _refused(text: str, why: str) -> errors.VaultError:
        log.warning("Favorites: link to %r refused: %s", text, why)
        return errors.InvalidData(why)
