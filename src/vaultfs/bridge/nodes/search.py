"""The search folders and the views: the vault's own search and named filters shown as
directories of symbolic links to document directories.

Owns these nodes (``SearchKey``) and what they mean; the calls and how long their
answers are kept are ``tree.search_results``'. The decisions, written down for users in
docs/bridge.md ("Search folders and views") and the user guide:

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

Every node here is the mount's own for the kernel (short timeouts, listings never
cached by the tree): an answer changes with no index change.
"""

from __future__ import annotations

import logging
import posixpath
import stat
import time
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, cast

from vaultfs import errors
from vaultfs.bridge.fs.attributes import Attr, ns
from vaultfs.bridge.fs.families import Parts
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree.filenames import Sibling, assign_names
from vaultfs.bridge.tree.keys import ROOT, Kind, NodeKey
from vaultfs.bridge.tree.link_targets import link_target
from vaultfs.bridge.tree.search_results import Answer, Hit, SearchResults
from vaultfs.bridge.tree.tree import Tree

__all__ = [
    "CONTENT_FORM",
    "FAVORITES",
    "SEARCH_DIR",
    "VERSIONS_FIELD",
    "VIEWS",
    "Search",
    "SearchKey",
    "SearchKind",
]

log = logging.getLogger(__name__)

#: the root's search directory: reachable by name, never listed
SEARCH_DIR = ".search"
#: ``.search/<form>/WORDS``: fields and file text, or the file text only
ALL_FORM = "all"
CONTENT_FORM = "content"
_FORMS = (ALL_FORM, CONTENT_FORM)
#: the views, by the named filter the vault knows them by (their folder's name)
FAVORITES = "Favorites"
VIEWS = (FAVORITES, "My Documents", "Recent Documents")
#: the field-like xattr of a search's folder (``user.vault.search.versions``)
VERSIONS_FIELD = "search.versions"
#: what a vault without the favourite call answers
_NO_FAVORITES = (errors.MalformedUrl, errors.MethodNotSupported)


class SearchKind(StrEnum):
    SEARCH = "search"
    SEARCHES = "searches"
    QUERY = "query"
    QLINK = "qlink"
    VIEW = "view"
    VLINK = "vlink"


class SearchKey(NodeKey):
    """``(SEARCH,)`` ``.search``; ``(SEARCHES, form)`` ``.search/all|content``;
    ``(QUERY, form, words)`` a search's folder (form ``""``: ``.search/WORDS``) and
    ``(QLINK, form, words, id)`` a document it found; ``(VIEW, name)`` a view and
    ``(VLINK, name, id)`` a document in it."""

    __slots__ = ()
    KINDS = LOCAL_KINDS = frozenset(SearchKind)
    FILE_KINDS = LINK_KINDS = frozenset({SearchKind.QLINK, SearchKind.VLINK})
    #: a link names a document, yet the node is the answer's: no document's change is
    #: told to the kernel for it (the family's nodes are local, short timeouts)
    OF_DOCUMENT = False

    @property
    def doc_id(self) -> int:
        """The document a link leads to."""
        return int(self[-1])

    @property
    def form(self) -> str:
        """A search's form (``SEARCHES``, ``QUERY``, ``QLINK``): ``all``, ``content``,
        or ``""`` (``.search/WORDS``)."""
        return str(self[1])

    @property
    def words(self) -> str:
        """What a search (``QUERY``, ``QLINK``) looks for."""
        return str(self[2])

    @property
    def view(self) -> str:
        """A view's name (``VIEW``, ``VLINK``)."""
        return str(self[1])


SEARCH = SearchKey(SearchKind.SEARCH)
_LINKS = SearchKey.FILE_KINDS


def _search(key: NodeKey) -> SearchKey:
    return cast(SearchKey, key)  # the family is given its own keys only


def _scope(key: NodeKey) -> str:
    return "contents" if _search(key).form == CONTENT_FORM else "all"


class Search(Family):
    key_type = SearchKey
    root_names = {SEARCH_DIR: SEARCH}
    root_listed = {name: SearchKey(SearchKind.VIEW, name) for name in VIEWS}

    def __init__(self, results: SearchResults | None) -> None:
        """``results``: the vault's answers, kept for the index's poll interval (None:
        nobody to ask, a search fails with EIO)."""
        self._results = results

    def results(self) -> SearchResults:
        """The vault's answers."""
        if self._results is None:
            raise errors.VaultUnavailable("this registry of families has no vault to ask")
        return self._results

    # --- names -----------------------------------------------------------------------

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        kind = key.kind
        if kind == SearchKind.SEARCH:
            return {form: SearchKey(SearchKind.SEARCHES, form) for form in _FORMS}
        if kind == SearchKind.SEARCHES:
            return {}  # every name is a search: reachable, never listed
        if kind in (SearchKind.QUERY, SearchKind.VIEW):
            return (await self._found(tree, key))[0]
        return await super().children(tree, key)

    async def unlisted(self, tree: Tree, key: NodeKey, name: str) -> NodeKey | None:
        if not name.split():
            return None
        if key.kind == SearchKind.SEARCH and name not in _FORMS:
            return SearchKey(SearchKind.QUERY, "", name)
        if key.kind == SearchKind.SEARCHES:
            return SearchKey(SearchKind.QUERY, _search(key).form, name)
        return None

    async def _answer(self, tree: Tree, key: NodeKey) -> Answer:
        results = self.results()
        if key.kind == SearchKind.QUERY:
            search = _search(key)
            return await results.search(search.words, content_only=search.form == CONTENT_FORM)
        name = _search(key).view
        try:
            return await results.view(name)
        except errors.InvalidData as exc:  # a vault without that named filter
            log.warning("the view %s is empty: the vault has no such filter (%s)", name, exc)
            return Answer((), 0.0)

    async def _found(self, tree: Tree, key: NodeKey) -> tuple[dict[str, NodeKey], dict[str, Hit]]:
        """(name -> link, name -> hit) of a search's folder or a view."""
        answer = await self._answer(tree, key)
        hits = [h for h in answer.hits if tree.index.get(h.doc_id) is not None]
        siblings = [
            Sibling(
                str(tree.record(h.doc_id).get("name__v") or h.doc_id),
                str(h.doc_id),
                (0, f"{h.doc_id:020d}"),
            )
            for h in hits
        ]
        names = assign_names(siblings)
        link = SearchKind.QLINK if key.kind == SearchKind.QUERY else SearchKind.VLINK
        return (
            {n: SearchKey(link, *key[1:], h.doc_id) for n, h in zip(names, hits, strict=True)},
            dict(zip(names, hits, strict=True)),
        )

    # --- what the nodes show -----------------------------------------------------------

    def _answered(self, key: NodeKey) -> float | None:
        """When the answer a search's folder or a view lists was given (its mtime)."""
        if self._results is None:
            return None
        if key.kind == SearchKind.QUERY:
            answer = self._results.kept("search", _scope(key), _search(key).words)
        elif key.kind == SearchKind.VIEW:
            answer = self._results.kept("view", _search(key).view)
        else:
            return None
        return answer.when if answer is not None and answer.when else None

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        attributes = parts.attributes
        if key.kind in _LINKS:  # its size is its text's, its times its document's
            text = await self._link_text(parts.tree, key)
            record = parts.tree.record(key.doc_id)
            mtime = ns(record.get("version_modified_date__v"))
            return attributes.make(ino, stat.S_IFLNK | 0o777, len(text.encode()), mtime, mtime)
        answered = self._answered(key)
        # Without an answer kept, the time now: a kernel that keeps listings compares a
        # folder's mtime before it serves one, and an mtime that stayed the same while
        # no answer was kept would let it serve an old listing for ever.
        mtime = int(answered * 1e9) if answered else time.time_ns()
        writable = key == SearchKey(SearchKind.VIEW, FAVORITES)
        return attributes.directory(ino, mtime, mtime, writable=writable)

    async def fields(self, parts: Parts, key: NodeKey) -> dict[str, Any]:
        """The xattrs of a search's folder: which versions of each document matched."""
        if key.kind != SearchKind.QUERY:
            return {}
        _, hits = await self._found(parts.tree, key)
        return {
            VERSIONS_FIELD: {
                name: [f"{major}.{minor}" for major, minor in hit.versions]
                for name, hit in hits.items()
            }
        }

    async def set_field(self, parts: Parts, key: NodeKey, name: str, value: bytes | None) -> None:
        raise errors.OperationNotPermitted("a search's fields are its answer's")

    async def _folder_path(self, tree: Tree, key: NodeKey) -> list[str]:
        """The names from the root to a link's folder."""
        link = _search(key)
        if link.kind == SearchKind.QLINK:
            return [SEARCH_DIR, *([link.form] if link.form else []), link.words]
        view = SearchKey(SearchKind.VIEW, link.view)
        root = await tree.children(ROOT)
        name = next((n for n, k in root.items() if k == view), None)
        if name is None:
            raise errors.NotFound(f"no view {link.view!r}")
        return [name]

    async def _link_text(self, tree: Tree, key: NodeKey) -> str:
        doc_id = key.doc_id
        if tree.index.get(doc_id) is None:
            raise errors.NotFound(f"document {doc_id} is not in the tree")
        here = await self._folder_path(tree, key)
        there = await tree.relationships.document_path(doc_id)
        return posixpath.relpath("/" + "/".join(there), "/" + "/".join(here))

    async def readlink(self, parts: Parts, key: NodeKey) -> str:
        """What a link reads: its document's directory, relative to the link's folder."""
        if key.kind not in _LINKS:
            return await super().readlink(parts, key)
        return await self._link_text(parts.tree, key)

    # --- favourites --------------------------------------------------------------------

    async def symlink(self, parts: Parts, parent: NodeKey, name: str, target: str) -> NodeKey:
        """``ln -s TARGET Favorites/NAME``: mark the document TARGET names."""
        if parent != SearchKey(SearchKind.VIEW, FAVORITES):
            log.warning("link %r refused: links are made in Favorites only", name)
            raise errors.OperationNotPermitted("links are made in Favorites only")
        doc_id = await self._document_named(parts, parent, target)
        await self._mark(parts, doc_id, True)
        return SearchKey(SearchKind.VLINK, FAVORITES, doc_id)

    async def unlink_in(self, parts: Parts, parent: NodeKey, name: str) -> None:
        """``rm Favorites/NAME``: unmark that document; nothing else is removed here."""
        if parent != SearchKey(SearchKind.VIEW, FAVORITES):
            log.warning("%r not removed: a search's or a view's links are its answer", name)
            raise errors.OperationNotPermitted(f"{name} cannot be removed")
        key = (await parts.tree.children(parent)).get(name)
        if key is None:
            raise errors.NotFound(name)
        await self._mark(parts, key.doc_id, False)

    async def _mark(self, parts: Parts, doc_id: int, favorite: bool) -> None:
        try:
            await self.results().set_favorite(doc_id, favorite)
        except _NO_FAVORITES as exc:
            log.warning(
                "Favorites cannot be changed: this vault has no favourite call (%s)",
                exc.message,
            )
            raise errors.Unsupported("this vault has no favourite call") from None
        log.info("document %d %s Favorites", doc_id, "added to" if favorite else "removed from")
        self.results().forget("view", FAVORITES)

    async def _document_named(self, parts: Parts, parent: NodeKey, text: str) -> int:
        """The document whose directory ``text`` names, read relative to ``parent``
        (or absolute below the mount point); EINVAL for anything else."""
        try:
            key = await link_target(
                parts.tree,
                text,
                parts.options.mountpoint,
                lambda: self._folder_path(parts.tree, SearchKey(SearchKind.VLINK, FAVORITES, 0)),
            )
        except errors.InvalidData as exc:
            raise _refused(text, exc.message) from None
        if key.kind != Kind.DOC:
            raise _refused(text, "not a document's directory")
        return key.doc_id


def _refused(text: str, why: str) -> errors.VaultError:
    log.warning("Favorites: link to %r refused: %s", text, why)
    return errors.InvalidData(why)
