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

``.search`` and ``.search/all|content`` are the mount's own for the kernel (short
timeouts). A search's folder, a view and their links are an answer's (``ANSWER_KINDS``):
the kernel keeps them with the vault's long timeouts, so a warm walk of a view costs
no request. What a folder shows for one answer in one index generation is made once
(``_Shown``: names and links), so that a lookup that does reach the mount is a dict's
answer. A link's key holds what it reads: a link that comes to read something else (its
document renamed or moved) is another node, and the kernel, which keeps what a link
reads (``cache_symlinks``), never reads an old target under a new name. The kernel is
told when what a folder shows changes:

* a folder's attributes are kept for the poll interval (the answer's life); once its
  answer is no longer fresh its mtime is the time now (what it shows may have changed),
  so the kernel drops its listing and lists it again, which asks the vault again;
* when a new answer (or a new index generation) shows other names or links,
  ``on_changed`` is told (``fs.freshness``: the kernel forgets the names that no longer
  lead to the same link); its mtime is then kept until it changes again;
* every index change makes the kernel ask for the folders' attributes again
  (``fs.freshness``): the answer was dropped with the generation.
"""

from __future__ import annotations

import logging
import posixpath
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

from cachetools import LRUCache

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
    ``(QLINK, form, words, text, id)`` a document it found; ``(VIEW, name)`` a view and
    ``(VLINK, name, text, id)`` a document in it (``text``: what the link reads)."""

    __slots__ = ()
    KINDS = frozenset(SearchKind)
    LOCAL_KINDS = frozenset({SearchKind.SEARCH, SearchKind.SEARCHES})
    ANSWER_KINDS = KINDS - LOCAL_KINDS
    FILE_KINDS = LINK_KINDS = frozenset({SearchKind.QLINK, SearchKind.VLINK})
    #: a link names a document, yet the node is the answer's: its changes are told by
    #: the family (``Search.on_changed``), not with its document's
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

    @property
    def text(self) -> str:
        """What a link (``QLINK``, ``VLINK``) reads."""
        return str(self[-2])


SEARCH = SearchKey(SearchKind.SEARCH)
_LINKS = SearchKey.FILE_KINDS
#: folders whose shown answer is kept (``Search._shown``), as many as answers are kept
_SHOWN = 64

#: told (folder, its links now) when a search's folder or a view shows other names or
#: other targets than before
AnswerChanged = Callable[[NodeKey, Mapping[str, NodeKey]], None]


@dataclass
class _Shown:
    """What a search's folder or a view shows for one answer in one index generation."""

    answer: Answer
    generation: int
    #: name -> link, and the hit each name stands for
    links: dict[str, NodeKey]
    hits: dict[str, Hit]
    #: nanoseconds: when what the folder shows may last have changed (its mtime)
    since: int


def _search(key: NodeKey) -> SearchKey:
    return cast(SearchKey, key)  # the family is given its own keys only


def _scope(key: NodeKey) -> str:
    return "contents" if _search(key).form == CONTENT_FORM else "all"


class Search(Family):
    key_type = SearchKey
    root_names = {SEARCH_DIR: SEARCH}
    root_listed = {name: SearchKey(SearchKind.VIEW, name) for name in VIEWS}

    def __init__(
        self, results: SearchResults | None, on_changed: list[AnswerChanged] | None = None
    ) -> None:
        """``results``: the vault's answers, kept for the index's poll interval (None:
        nobody to ask, a search fails with EIO); ``on_changed``: told when a folder
        shows something else (the builder adds the kernel's side to it)."""
        self._results = results
        self.on_changed: list[AnswerChanged] = on_changed if on_changed is not None else []
        self._shown: LRUCache[NodeKey, _Shown] = LRUCache(maxsize=_SHOWN)

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
            return (await self._shown_now(tree, key)).links
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

    async def _shown_now(self, tree: Tree, key: NodeKey) -> _Shown:
        """What a search's folder or a view shows now (asking the vault when its answer
        is no longer fresh); tells ``on_changed`` when that is not what it showed."""
        answer = await self._answer(tree, key)
        generation = tree.index.generation
        before = self._shown.get(key)
        if before is not None and before.answer is answer and before.generation == generation:
            return before
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
        here = await self._folder_path(tree, key)
        links: dict[str, NodeKey] = {
            n: SearchKey(link, *key[1:], await self._link_text(tree, h.doc_id, here), h.doc_id)
            for n, h in zip(names, hits, strict=True)
        }
        same = before is not None and before.links == links
        since = before.since if before is not None and same else time.time_ns()
        shown = _Shown(answer, generation, links, dict(zip(names, hits, strict=True)), since)
        self._shown[key] = shown
        if not same:
            for changed in self.on_changed:
                changed(key, links)
        return shown

    def _fresh(self, tree: Tree, key: NodeKey) -> _Shown | None:
        """What the folder shows, while its answer is fresh (no call made)."""
        shown = self._shown.get(key)
        if shown is None or self._results is None or shown.generation != tree.index.generation:
            return None
        if key.kind == SearchKind.QUERY:
            kept = self._results.kept("search", _scope(key), _search(key).words)
        else:
            kept = self._results.kept("view", _search(key).view)
        return shown if kept is shown.answer else None

    # --- what the nodes show -----------------------------------------------------------

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        attributes, tree = parts.attributes, parts.tree
        if key.kind in _LINKS:  # its size is its text's, its times its document's
            text = _search(key).text
            record = tree.record(key.doc_id)
            mtime = ns(record.get("version_modified_date__v"))
            return attributes.make(ino, stat.S_IFLNK | 0o777, len(text.encode()), mtime, mtime)
        writable = key == SearchKey(SearchKind.VIEW, FAVORITES)
        if key.kind not in self.key_type.ANSWER_KINDS:
            now = time.time_ns()
            return attributes.directory(ino, now, now, writable=writable)
        shown = self._fresh(tree, key)
        if shown is not None:
            mtime = shown.since
        else:
            # No fresh answer: what it shows may have changed, and a kernel that keeps
            # listings compares a folder's mtime before it serves one. The time now
            # makes it list again (which asks the vault); a new answer that shows the
            # same keeps this mtime.
            mtime = time.time_ns()
            if (before := self._shown.get(key)) is not None:
                before.since = mtime
        attr = attributes.directory(ino, mtime, mtime, writable=writable)
        if self._results is not None:  # asked again with the answer
            attr.timeout = min(attr.timeout, self._results.ttl)
        return attr

    async def fields(self, parts: Parts, key: NodeKey) -> dict[str, Any]:
        """The xattrs of a search's folder: which versions of each document matched."""
        if key.kind != SearchKind.QUERY:
            return {}
        hits = (await self._shown_now(parts.tree, key)).hits
        return {
            VERSIONS_FIELD: {
                name: [f"{major}.{minor}" for major, minor in hit.versions]
                for name, hit in hits.items()
            }
        }

    async def set_field(self, parts: Parts, key: NodeKey, name: str, value: bytes | None) -> None:
        raise errors.OperationNotPermitted("a search's fields are its answer's")

    async def _folder_path(self, tree: Tree, key: NodeKey) -> list[str]:
        """The names from the root to a search's folder or a view, or a link's."""
        link = _search(key)
        if link.kind in (SearchKind.QUERY, SearchKind.QLINK):
            return [SEARCH_DIR, *([link.form] if link.form else []), link.words]
        view = SearchKey(SearchKind.VIEW, link.view)
        root = await tree.children(ROOT)
        name = next((n for n, k in root.items() if k == view), None)
        if name is None:
            raise errors.NotFound(f"no view {link.view!r}")
        return [name]

    async def _link_text(self, tree: Tree, doc_id: int, here: list[str]) -> str:
        """What a link to document ``doc_id`` in the folder at ``here`` reads: the
        document's directory, relative to the folder."""
        if tree.index.get(doc_id) is None:
            raise errors.NotFound(f"document {doc_id} is not in the tree")
        there = await tree.relationships.document_path(doc_id)
        return posixpath.relpath("/" + "/".join(there), "/" + "/".join(here))

    async def readlink(self, parts: Parts, key: NodeKey) -> str:
        """What a link reads: its document's directory, relative to the link's folder."""
        if key.kind not in _LINKS:
            return await super().readlink(parts, key)
        return _search(key).text

    # --- favourites --------------------------------------------------------------------

    async def symlink(self, parts: Parts, parent: NodeKey, name: str, target: str) -> NodeKey:
        """``ln -s TARGET Favorites/NAME``: mark the document TARGET names."""
        if parent != SearchKey(SearchKind.VIEW, FAVORITES):
            log.warning("link %r refused: links are made in Favorites only", name)
            raise errors.OperationNotPermitted("links are made in Favorites only")
        doc_id = await self._document_named(parts, parent, target)
        await self._mark(parts, doc_id, True)
        here = await self._folder_path(parts.tree, parent)
        text = await self._link_text(parts.tree, doc_id, here)
        return SearchKey(SearchKind.VLINK, FAVORITES, text, doc_id)

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
                lambda: self._folder_path(parts.tree, parent),
            )
        except errors.InvalidData as exc:
            raise _refused(text, exc.message) from None
        if key.kind != Kind.DOC:
            raise _refused(text, "not a document's directory")
        return key.doc_id


def _refused(text: str, why: str) -> errors.VaultError:
    log.warning("Favorites: link to %r refused: %s", text, why)
    return errors.InvalidData(why)
