"""``set-password``, ``login`` and ``logout``: what a user stores ahead of a mount, a
password in the system keyring or a single sign-on (``signin``), and forgetting it."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TYPE_CHECKING

from vaultfs import errors
from vaultfs.bridge.commands.credentials import CredentialError, store_in_keyring
from vaultfs.bridge.commands.log_options import log_level, logging_arguments
from vaultfs.bridge.daemon.logs import setup_logging
from vaultfs.profiles import ProfileError, load_profile

if TYPE_CHECKING:
    from vaultfs.bridge.commands.signin import SsoSettings

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``set-password``, ``login`` and ``logout`` to the ``vaultfs`` parser."""
    password = sub.add_parser(
        "set-password", help="store a password in the system keyring (read from a prompt)"
    )
    password.add_argument("target", nargs="?", metavar="PROFILE")
    password.add_argument("--url", help="the vault, when no profile is named")
    password.add_argument("--user", help="the user name, when no profile is named")
    password.set_defaults(handler=_set_password)

    login = sub.add_parser(
        "login",
        help="sign in through the vault's identity provider (single sign-on) ahead of a mount",
    )
    login.add_argument("target", nargs="?", metavar="PROFILE")
    login.add_argument("--url", help="the vault, when no profile is named")
    login.add_argument("--user", help="the user name, when no profile is named")
    login.add_argument(
        "--device-code", action="store_true", help="show a code to approve on another device"
    )
    logging_arguments(login)
    login.set_defaults(handler=_login)

    logout = sub.add_parser(
        "logout", help="forget (and revoke at the identity provider) a single sign-on"
    )
    logout.add_argument("target", nargs="?", metavar="PROFILE")
    logout.add_argument("--url", help="the vault, when no profile is named")
    logout.add_argument("--user", help="the user name, when no profile is named")
    logging_arguments(logout)
    logout.set_defaults(handler=_logout)


def _set_password(args: argparse.Namespace) -> int:
    try:
        if args.target is not None:
            profile = load_profile(args.target)
            url, user = profile.url, profile.user
        elif args.url and args.user:
            url, user = args.url, args.user
        else:
            print("vaultfs set-password: name a profile, or give --url and --user", file=sys.stderr)
            return 2
        if sys.stdin.isatty():
            password = getpass.getpass(f"Password for {user} at {url}: ")
        else:
            password = sys.stdin.readline().rstrip("\n")
        backend = store_in_keyring(url, user, password)
    except (ProfileError, CredentialError) as exc:
        print(f"vaultfs set-password: {exc}", file=sys.stderr)
        return 1
    print(f"stored the password of {user} at {url} in the keyring ({backend})")
    return 0


def _who(args: argparse.Namespace, command: str) -> tuple[str, str, SsoSettings] | None:
    """(url, user, single sign-on settings) of a profile or of --url and --user, once
    the command's logging is set up."""
    # Imported here: single sign-on (Authlib) is for the commands that sign in.
    from vaultfs.bridge.commands.signin import SsoSettings

    setup_logging(log_level(args), args.log_file)
    if args.target is not None:
        profile = load_profile(args.target)
        return profile.url, profile.user, SsoSettings.from_table(dict(profile.oauth))
    if args.url and args.user:
        return args.url.rstrip("/"), args.user, SsoSettings.from_table({})
    print(f"vaultfs {command}: name a profile, or give --url and --user", file=sys.stderr)
    return None


def _login(args: argparse.Namespace) -> int:
    from vaultfs.bridge.commands import signin

    try:
        who = _who(args, "login")
        if who is None:
            return 2
        url, user, settings = who
        discovery = signin.how_user_signs_in(url, user, settings)
        if not discovery.sso:
            print(
                f"vaultfs login: {user} signs in to {url} with a password "
                "(store it with `vaultfs set-password`)",
                file=sys.stderr,
            )
            return 1
        setup = signin.prepare(url, user, discovery, settings)
        signin.interactive_sign_in(setup, device=args.device_code)
        vault = signin.check_session(setup)
    except (ProfileError, CredentialError) as exc:
        print(f"vaultfs login: {exc}", file=sys.stderr)
        return 1
    except errors.VaultError as exc:
        print(f"vaultfs login: {exc.type}: {exc}", file=sys.stderr)
        return 1
    print(f"signed in to {url} as {user} (vault {vault}); `vaultfs mount` needs no prompt now")
    return 0


def _logout(args: argparse.Namespace) -> int:
    from vaultfs.bridge.commands import signin

    try:
        who = _who(args, "logout")
        if who is None:
            return 2
        url, user, settings = who
        revoked, found = signin.sign_out(url, user, settings)
    except (ProfileError, CredentialError) as exc:
        print(f"vaultfs logout: {exc}", file=sys.stderr)
        return 1
    if not found:
        print(f"no sign-in of {user} at {url} was stored")
        return 0
    where = "revoked at the identity provider and " if revoked else ""
    print(f"the sign-in of {user} at {url} is {where}forgotten")
    return 0
