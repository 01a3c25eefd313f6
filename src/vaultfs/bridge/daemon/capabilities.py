"""What the installed pyfuse3 lets the mount ask of the kernel, decided once at start.

Owns the choice between the kernel-cache route and today's behaviour. ``./run`` builds
pyfuse3 from its source distribution with ``patches/pyfuse3-3.5.0-kernel-cache.patch``,
which names what it adds in ``pyfuse3.features``; a stock pyfuse3 (a plain ``pip
install`` elsewhere) names nothing, and the mount then behaves as before. What is used:

- ``no_opendir`` (the default, the faster of the two ways measured in
  docs/benchmarks.md): OPENDIR is answered ENOSYS, the kernel sends no OPENDIR and
  RELEASEDIR for any directory of the mount and keeps each listing until the mount
  invalidates the directory's inode (every change the index learns does, see
  ``fuse.kernel_cache``); pyfuse3 gives readdir the inode, and answers the kernel's
  read at the end of a listing it keeps whole itself where it offers ``kept_listings``
  (the mount fills that dict, ``kernel_cache.kept``);
- ``cache_readdir``: the other way, when ``no_opendir`` is not offered or not wanted: a
  directory of the vault is opened with ``cache_readdir`` and ``keep_cache``;
- ``xattr_namespaces``: getxattr of names outside ``user.`` (the ``security.selinux``
  and ``system.posix_acl_*`` probes of ``ls -l``) is answered inside pyfuse3, without
  a request reaching Python, as the mount itself answers them (``tree.xattrs``):
  ENOTSUP, the ACL names included (the mount has no ACLs);
- ``noflush``: a file opened read-only is opened with ``FOPEN_NOFLUSH``, so its close
  sends no FLUSH (the flush of a read-only open has nothing to do);
- ``kept_opens``: a file whose content stays the same while the kernel keeps its pages
  (a version's file, a rendition, an attachment, and the latest source file while
  nobody writes it) gets one handle
  for every read-only open once the kernel holds its pages; pyfuse3 answers those OPENs
  and their RELEASEs itself, so a warm ``grep -r`` costs no Python per file. Every
  invalidation of the inode's attributes (``fuse.kernel_cache``) and an open for writing
  take that back; the next open reaches the mount;
- ``readdirplus_auto``: the kernel asks for entries' attributes (READDIRPLUS) only for
  the first part of a listing and while a program looks its entries up (``ls -l``);
  otherwise (``ls``, ``find``) a plain READDIR, answered with names, inode numbers and
  types (``FileSystem.readdir_plain``): no attributes made, no inode counted;
- ``plus_names`` (with ``no_opendir``, in place of ``readdirplus_auto``): every listing
  is a READDIRPLUS, and the mount chooses which pages carry attributes and which are
  names (entries of node id 0, as cheap as a plain READDIR's): the kernel's choice
  misses programs that read many names before they stat them (``fuse.listing_pages``);
- ``cache_symlinks``: the kernel keeps what a symbolic link reads (a view's and a
  search's links, a relationship's) until the mount drops it (``fs.freshness``: the
  link's answer or its documents changed), so a warm ``find -ls`` reads no link twice;
- ``shared_entries``: a lookup of a document directory's ``.hidden`` (one node in every
  document's directory, which GIO reads in each folder it lists or counts) is answered
  inside pyfuse3 (``kernel_cache.shared_entries``).

The environment variable ``VAULTFS_PYFUSE3_FEATURES`` narrows the choice (a comma list
of the names above, or ``none`` for exactly the stock behaviour): the test suite runs
its listing and freshness tests with and without, and the benchmarks measure each.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

__all__ = ["DEFAULT", "ENVIRONMENT", "Capabilities", "detect"]

#: the environment variable that narrows what is used (``none``: the stock behaviour)
ENVIRONMENT = "VAULTFS_PYFUSE3_FEATURES"


@dataclass(frozen=True)
class Capabilities:
    """Which of the patch's features the mount uses."""

    #: OPENDIR answered ENOSYS: the kernel opens directories and keeps their listings
    #: itself, and readdir is given the directory's inode (``ino_without_fh``)
    no_opendir: bool = False
    #: directories opened with ``cache_readdir`` and ``keep_cache`` (when OPENDIR is sent)
    cache_readdir: bool = False
    #: getxattr outside ``user.`` answered inside pyfuse3
    xattr_namespaces: bool = False
    #: read-only opens answered with ``noflush``: no FLUSH at their close
    noflush: bool = False
    #: warm read-only opens of unchanging content answered inside pyfuse3
    kept_opens: bool = False
    #: plain READDIR where the kernel needs no attributes
    readdirplus_auto: bool = False
    #: every listing a READDIRPLUS, its pages names only where the mount sees no program
    #: that needs attributes
    plus_names: bool = False
    #: the kernel keeps what a symbolic link reads
    cache_symlinks: bool = False
    #: lookups of the names one node in every document's directory answered in pyfuse3
    shared_entries: bool = False

    def names(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name)]

    def describe(self) -> str:
        """For the start's log line."""
        used = self.names()
        return ", ".join(used) if used else "none (stock pyfuse3 behaviour)"


#: what is used when the environment does not say: every feature pyfuse3 offers
DEFAULT = frozenset(
    {
        "no_opendir",
        "cache_readdir",
        "xattr_namespaces",
        "noflush",
        "kept_opens",
        "readdirplus_auto",
        "plus_names",
        "cache_symlinks",
        "shared_entries",
    }
)


def detect(offered: Iterable[str], environ: Mapping[str, str] | None = None) -> Capabilities:
    """What to use of ``offered`` (``pyfuse3.features``, empty for a stock pyfuse3),
    narrowed by ``VAULTFS_PYFUSE3_FEATURES``. A name the variable asks for that pyfuse3
    does not offer is simply not used."""
    available = set(offered)
    setting = (os.environ if environ is None else environ).get(ENVIRONMENT, "").strip()
    wanted = {n.strip() for n in setting.split(",")} if setting else set(DEFAULT)
    no_opendir = "no_opendir" in wanted and "ino_without_fh" in available
    # The mount's own choice of the pages with attributes, where it reads by inode.
    plus_names = no_opendir and "plus_names" in wanted & available
    return Capabilities(
        no_opendir=no_opendir,
        # Without OPENDIR there is no open to set flags at: the kernel keeps listings.
        cache_readdir=not no_opendir and "cache_readdir" in wanted & available,
        xattr_namespaces="xattr_namespaces" in wanted & available,
        noflush="noflush" in wanted & available,
        kept_opens="kept_opens" in wanted & available,
        readdirplus_auto=not plus_names and "readdirplus_auto" in wanted & available,
        plus_names=plus_names,
        cache_symlinks="cache_symlinks" in wanted & available,
        shared_entries="shared_entries" in wanted & available,
    )
