"""What the mount uses of pyfuse3: every feature offered by default, narrowed by the
environment, nothing on a stock pyfuse3."""

from __future__ import annotations

import pytest

from vaultfs.bridge.daemon.capabilities import ENVIRONMENT, Capabilities, detect

PATCHED = frozenset(
    {
        "cache_readdir",
        "opendir_fileinfo",
        "ino_without_fh",
        "xattr_namespaces",
        "noflush",
        "kept_opens",
    }
)


@pytest.mark.parametrize(
    ("offered", "setting", "expected"),
    [
        (
            PATCHED,
            None,
            Capabilities(no_opendir=True, xattr_namespaces=True, noflush=True, kept_opens=True),
        ),
        (frozenset(), None, Capabilities()),
        (PATCHED, "none", Capabilities()),
        (
            PATCHED,
            "cache_readdir,xattr_namespaces",
            Capabilities(cache_readdir=True, xattr_namespaces=True),
        ),
        (PATCHED, "xattr_namespaces", Capabilities(xattr_namespaces=True)),
        (PATCHED, "noflush", Capabilities(noflush=True)),
        (PATCHED, "kept_opens", Capabilities(kept_opens=True)),
        # a pyfuse3 that keeps listings on open only: that way, by default
        (
            frozenset({"cache_readdir", "opendir_fileinfo"}),
            None,
            Capabilities(cache_readdir=True),
        ),
        # asked for, not offered: not used
        (frozenset({"xattr_namespaces"}), "no_opendir,cache_readdir", Capabilities()),
        # the mount's choice of the pages with attributes in place of the kernel's,
        # only where it reads by inode; the kernel's where it is not offered or wanted
        (
            PATCHED | {"readdirplus_auto", "plus_names"},
            None,
            Capabilities(
                no_opendir=True,
                xattr_namespaces=True,
                noflush=True,
                kept_opens=True,
                plus_names=True,
            ),
        ),
        (
            PATCHED | {"readdirplus_auto", "plus_names"},
            "no_opendir,readdirplus_auto",
            Capabilities(no_opendir=True, readdirplus_auto=True),
        ),
        (
            PATCHED | {"readdirplus_auto", "plus_names"},
            "cache_readdir,readdirplus_auto,plus_names",
            Capabilities(cache_readdir=True, readdirplus_auto=True),
        ),
    ],
    ids=[
        "patched",
        "stock",
        "none",
        "cache_readdir",
        "xattrs only",
        "noflush only",
        "kept_opens only",
        "partial",
        "not offered",
        "plus_names",
        "kernel's choice",
        "plus_names needs no_opendir",
    ],
)
def test_detect(offered: frozenset[str], setting: str | None, expected: Capabilities) -> None:
    environ = {} if setting is None else {ENVIRONMENT: setting}
    assert detect(offered, environ) == expected


def test_describe_names_what_is_used() -> None:
    assert Capabilities(no_opendir=True, xattr_namespaces=True).describe() == (
        "no_opendir, xattr_namespaces"
    )
    assert Capabilities().describe() == "none (stock pyfuse3 behaviour)"
