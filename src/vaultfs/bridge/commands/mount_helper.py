"""``mount.fuse.vaultfs``: the helper mount(8) runs for ``-t fuse.vaultfs`` and fstab.

mount(8) calls ``mount.fuse.vaultfs SOURCE MOUNTPOINT [-sfnv] [-o OPTIONS]``. This
module turns that into ``vaultfs mount SOURCE MOUNTPOINT --user ... -o ...``: options
that belong to mount(8) or systemd (``_netdev``, ``noauto``, ``x-systemd.*``, ...) are
dropped, ``user=`` and ``password_file=`` become the mount command's own flags, and the
rest is passed on as ``-o``. The password itself never appears on a command line.

mount(8) strips nothing of ``user=NAME`` when root mounts, but when an ordinary user
mounts an fstab entry carrying the ``user``/``users`` option it adds ``user=<that
user>`` itself; ``username=NAME`` is never touched and is what fstab lines should use.

mount(8) looks for helpers in /sbin: ``install`` (``vaultfs install-helper``) links
this program's console script there. The console script is ``vaultfs.cli:mount_helper``,
which hands the ``vaultfs`` command to ``run``: the bridge's commands never import the
command line that sits above them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["run", "translate"]

# Options mount(8), fstab or systemd consume themselves; meaningless to the daemon.
_DROPPED = {
    "_netdev",
    "auto",
    "noauto",
    "nofail",
    "defaults",
    "rw",
    "user",
    "users",
    "owner",
    "group",
    "suid",
    "nosuid",
    "dev",
    "nodev",
    "exec",
    "noexec",
    "atime",
    "noatime",
    "relatime",
    "norelatime",
    "strictatime",
    "sync",
    "async",
    "dirsync",
    "lazytime",
}
_DROPPED_PREFIXES = ("x-", "comment=", "helper=")


def translate(argv: list[str]) -> list[str]:
    """Map a mount(8) helper argv (without the program name) to ``vaultfs mount`` argv."""
    positional: list[str] = []
    options: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "-o":
            options.extend(o for o in next(args, "").split(",") if o)
        elif arg.startswith("-o"):
            options.extend(o for o in arg[2:].split(",") if o)
        elif arg in ("-t", "-N"):
            next(args, None)  # the type (fuse.vaultfs) and a namespace: nothing to pass on
        elif arg.startswith("-"):
            continue  # -s (sloppy), -f (fake), -n (no mtab), -v (verbose)
        else:
            positional.append(arg)
    if len(positional) != 2:
        raise SystemExit("usage: mount.fuse.vaultfs SOURCE MOUNTPOINT [-o OPTIONS]")
    source, mountpoint = positional
    command = ["mount", source, mountpoint]
    passed: list[str] = []
    users: dict[str, str] = {}
    for option in options:
        key, _, value = option.partition("=")
        if key in ("user", "username") and value:
            users[key] = value
        elif key == "password_file":
            command += ["--password-file", value]
        elif option in _DROPPED or option.startswith(_DROPPED_PREFIXES):
            continue
        else:
            passed.append(option)
    # username= wins: mount(8) may have written user= itself (see above).
    user = users.get("username") or users.get("user")
    if user:
        command[3:3] = ["--user", user]
    if passed:
        command += ["-o", ",".join(passed)]
    return command


def run(argv: list[str], vaultfs_main: Callable[[list[str]], int]) -> int:
    """Run the helper's ``argv`` (without the program name) as ``vaultfs_main`` (the
    ``vaultfs`` command, handed in by ``vaultfs.cli``, which sits above this module); with
    ``VAULTFS_HELPER_DRY_RUN`` set, print the command instead."""
    command = translate(argv)
    if os.environ.get("VAULTFS_HELPER_DRY_RUN"):
        print(" ".join(["vaultfs", *command]))
        return 0
    return vaultfs_main(command)
