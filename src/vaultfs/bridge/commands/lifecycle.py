"""The commands of a document's life on a mounted vault: ``actions``, ``do``, ``event``,
``checkout`` and ``checkin``.

They speak to the mount's daemon through extended attributes of the document's
directory (or its source file), so they need no credentials and no pyfuse3:

* ``vaultfs actions PATH`` reads ``user.vault.actions`` and prints the actions
  offered on the latest version with their entry requirements (met or not);
* ``vaultfs do PATH ACTION [--set NAME=VALUE ...]`` sets each ``--set`` that is no
  WorkflowActivation requirement of the action as a field (``user.vault.<name>``),
  checks that every required requirement is met or given, and starts the action by
  writing ``user.vault.action`` (a JSON object when it has WorkflowActivation values);
* ``vaultfs event PATH TYPE SUBTYPE [--classification C] [--set NAME=VALUE ...]``
  logs an event by writing ``user.vault.event``;
* ``vaultfs checkout PATH...`` checks each document out for a trip (``user.vault.checkout``
  = 1: the vault's check-out, held until ``vaultfs checkin PATH...`` writes 0), so that
  what is saved offline checks in without a conflict.

Exit codes: 0 done, 1 refused (the reason on stderr: from the check made here, or
the vault's, read back from ``user.vault.last_error``), 2 a usage error.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["format_actions", "register"]

ACTIONS = "user.vault.actions"
ACTION = "user.vault.action"
EVENT = "user.vault.event"
LAST_ERROR = "user.vault.last_error"
CHECKOUT = "user.vault.checkout"
FIELD_PREFIX = "user.vault."
_DOCUMENT_SCOPES = frozenset({"Document", "Binder"})
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class Refused(Exception):
    """The command cannot be done: the message says why (exit 1)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    actions = sub.add_parser(
        "actions", help="list the lifecycle actions of a document on a mounted vault"
    )
    actions.add_argument("path", type=Path, help="a document directory or its source file")
    actions.add_argument("--json", action="store_true", help="print the daemon's json")
    actions.set_defaults(handler=_actions)

    do = sub.add_parser("do", help="start a lifecycle action on a document on a mounted vault")
    do.add_argument("path", type=Path, help="a document directory or its source file")
    do.add_argument("action", help="the action's name (see vaultfs actions)")
    do.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a field set on the document first, or a value passed to the action "
        "(dates YYYY-MM-DD; users and groups as user:ID,group:ID or names); repeatable",
    )
    do.set_defaults(handler=_do)

    event = sub.add_parser("event", help="log a distribution event on a document")
    event.add_argument("path", type=Path, help="a document directory or its source file")
    event.add_argument("type", help="event type (name or label), e.g. distribution__v")
    event.add_argument("subtype", help="event subtype (name or label), e.g. approved_email__v")
    event.add_argument("--classification", help="the event's classification (name or label)")
    event.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="NAME=VALUE", help="a property"
    )
    event.set_defaults(handler=_event)

    checkout = sub.add_parser(
        "checkout", help="check documents out before going offline (held until checkin)"
    )
    checkout.add_argument("paths", type=Path, nargs="+", metavar="PATH", help="documents")
    checkout.set_defaults(handler=lambda args: _run("checkout", _trip, args.paths, True))
    checkin = sub.add_parser("checkin", help="end the check-outs vaultfs checkout took")
    checkin.add_argument("paths", type=Path, nargs="+", metavar="PATH", help="documents")
    checkin.set_defaults(handler=lambda args: _run("checkin", _trip, args.paths, False))


# --- talking to the daemon ----------------------------------------------------------


def _get(path: Path, name: str) -> bytes:
    try:
        return os.getxattr(path, name)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP):
            raise Refused(f"{path} is not a document on a vaultfs mount") from None
        raise Refused(f"{path}: {exc.strerror}") from None


def _vault_reason(path: Path, exc: OSError) -> str:
    """Why the daemon refused: the vault's refusal it kept, else the errno."""
    try:
        kept = json.loads(os.getxattr(path, LAST_ERROR))
    except (OSError, ValueError):
        return exc.strerror or str(exc)
    messages = [str(e.get("message")) for e in kept.get("errors") or [] if e.get("message")]
    return f"{kept.get('type')}: " + ("; ".join(messages) or str(kept.get("message")))


def _describe(path: Path) -> dict[str, Any]:
    try:
        value: dict[str, Any] = json.loads(_get(path, ACTIONS))
    except ValueError as exc:
        raise Refused(f"{path}: the mount answered no json ({exc})") from None
    return value


def _pairs(items: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise argparse.ArgumentTypeError(f"--set takes NAME=VALUE, not {item!r}")
        pairs[name.strip()] = value
    return pairs


def _run(command: str, body: Any, *args: Any) -> int:
    try:
        return int(body(*args))
    except argparse.ArgumentTypeError as exc:
        print(f"vaultfs {command}: {exc}", file=sys.stderr)
        return 2
    except Refused as exc:
        print(f"vaultfs {command}: {exc}", file=sys.stderr)
        return 1


# --- checkout and checkin ------------------------------------------------------------


def _trip(paths: list[Path], out: bool) -> int:
    """Check each document out for a trip, or end that; every path is tried, and the
    exit code is 1 when any was refused (each named with why)."""
    refused = 0
    for path in paths:
        _get(path, CHECKOUT)  # a document on a mount, or refused as not one
        try:
            os.setxattr(path, CHECKOUT, b"1" if out else b"0")
        except OSError as exc:
            refused += 1
            why = {
                errno.EBUSY: "checked out by someone else (or by you on another client)",
                errno.EHOSTUNREACH: "the vault cannot be reached: check out while online",
            }.get(exc.errno or 0, exc.strerror or str(exc))
            print(f"vaultfs {'checkout' if out else 'checkin'}: {path}: {why}", file=sys.stderr)
            continue
        print(f"{path}: {'checked out' if out else 'checked in'}")
    return 1 if refused else 0


# --- actions ------------------------------------------------------------------------


def _requirement_line(req: dict[str, Any]) -> str:
    name, scope = req.get("name"), req.get("scope")
    needed = "required" if req.get("required") else "optional"
    if scope in _DOCUMENT_SCOPES:
        current = req.get("currentSetting")
        state = f"met ({_text(current)})" if req.get("met") else "NOT met: set it on the document"
    else:
        kind = req.get("type")
        hint = "YYYY-MM-DD" if kind == "Date" else "user:ID,group:ID or names"
        state = f"passed with the action: --set {name}=" + (
            hint if kind in ("Date", "ObjectReference") else "VALUE"
        )
    return f"    {name}  ({req.get('description')}; {req.get('type')}, {scope}, {needed}): {state}"


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def format_actions(description: dict[str, Any]) -> str:
    """The human form of ``user.vault.actions``."""
    head = f"version {description.get('version')}, status {description.get('status__v')}"
    actions = description.get("actions") or []
    if not actions:
        return head + ": no lifecycle actions offered (none in this state, or in a workflow)"
    lines = [head + ":"]
    for action in actions:
        lines.append(f"{action.get('name')}  {action.get('label')}  ({action.get('type')})")
        lines.extend(_requirement_line(r) for r in action.get("requirements") or [])
    return "\n".join(lines)


def _actions(args: argparse.Namespace) -> int:
    def body() -> int:
        description = _describe(args.path)
        if args.json:
            print(json.dumps(description, indent=2, ensure_ascii=False))
        else:
            print(format_actions(description))
        return 0

    return _run("actions", body)


# --- do -----------------------------------------------------------------------------


def _do(args: argparse.Namespace) -> int:
    return _run("do", _start, args.path, args.action, args.sets)


def _start(path: Path, name: str, sets: list[str]) -> int:
    values = _pairs(sets)
    description = _describe(path)
    offered = {str(a.get("name")): a for a in description.get("actions") or []}
    action = offered.get(name) or next(
        (a for a in offered.values() if str(a.get("label")).lower() == name.lower()), None
    )
    if action is None:
        names = ", ".join(offered) or "none"
        raise Refused(
            f"{name} is not offered on version {description.get('version')} "
            f"(status {description.get('status__v')}); offered: {names}"
        )
    name = str(action["name"])
    requirements = {str(r.get("name")): r for r in action.get("requirements") or []}
    params = {
        k: v
        for k, v in values.items()
        if k in requirements and requirements[k].get("scope") not in _DOCUMENT_SCOPES
    }
    for field, value in values.items():
        if field in params:
            continue
        try:
            os.setxattr(path, FIELD_PREFIX + field, value.encode())
        except OSError as exc:
            raise Refused(f"cannot set {field}: {exc.strerror}") from None
    unmet = [
        f"{n} ({r.get('description')})"
        for n, r in requirements.items()
        if r.get("required")
        and (
            (r.get("scope") in _DOCUMENT_SCOPES and not r.get("met") and n not in values)
            or (r.get("scope") not in _DOCUMENT_SCOPES and not str(params.get(n, "")).strip())
        )
    ]
    if unmet:
        raise Refused(
            f"{name}: entry requirements not met: {', '.join(unmet)} "
            "(give them with --set NAME=VALUE)"
        )
    for n, value in params.items():
        if requirements[n].get("type") == "Date" and not _DATE.match(value.strip()):
            raise Refused(f"{name}: {n} must be a date YYYY-MM-DD, not {value!r}")
    request = json.dumps({"action": name, "params": params}) if params else name
    try:
        os.setxattr(path, ACTION, request.encode())
    except OSError as exc:
        raise Refused(f"{name} refused: {_vault_reason(path, exc)}") from None
    status = _get(path, FIELD_PREFIX + "status__v").decode()
    print(f"{name}: started; status is now {status}")
    return 0


# --- event --------------------------------------------------------------------------


def _event(args: argparse.Namespace) -> int:
    def body() -> int:
        fields: dict[str, str] = {
            "event_type__v": args.type,
            "event_subtype__v": args.subtype,
        }
        if args.classification:
            fields["classification__v"] = args.classification
        fields.update(_pairs(args.sets))
        try:
            os.setxattr(args.path, EVENT, json.dumps(fields).encode())
        except OSError as exc:
            if exc.errno in (errno.ENOTSUP, errno.ENODATA):
                raise Refused(f"{args.path} is not a document on a vaultfs mount") from None
            raise Refused(f"event refused: {_vault_reason(args.path, exc)}") from None
        print(f"event {args.type}/{args.subtype} logged")
        return 0

    return _run("event", body)
