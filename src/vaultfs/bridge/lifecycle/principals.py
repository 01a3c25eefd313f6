"""User and group lists for lifecycle actions: names in, ``user:ID,group:ID`` out.

A WorkflowActivation requirement of type ObjectReference (an approver, reviewers)
takes a comma-separated list of ``user:<id>`` and ``group:<id>`` items. People know
names, so an item may also be ``user:<user name>``, ``group:<group name or label>``
or a bare name (a user name first, then a group name or label), compared without
case. Names are translated here, in the daemon, with the vault's user list
(``GET /objects/users``) and group list (``GET /objects/groups``), each read once per
translation that needs it; the session's own user name is known without a call. An
item that names nobody is ``InvalidData`` naming it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

from vaultfs import errors
from vaultfs.client import VaultApi

__all__ = ["Principals", "items_of"]

log = logging.getLogger(__name__)

_BY_ID = re.compile(r"^(user|group):\d+$")


def items_of(value: Any) -> list[str]:
    """The items of a list value: a JSON array, or comma-separated text."""
    if isinstance(value, list):
        raw: Iterable[Any] = value
    else:
        raw = str(value).split(",")
    return [str(item).strip() for item in raw if str(item).strip()]


class Principals:
    def __init__(self, client: VaultApi) -> None:
        self._client = client

    async def resolve(self, name: str, value: Any) -> str:
        """The ``user:ID,group:ID`` text for requirement ``name``'s ``value``."""
        items = items_of(value)
        if all(_BY_ID.match(item) for item in items):
            return ",".join(items)
        users = await self._users()
        groups: dict[str, int] | None = None
        result = []
        for item in items:
            if _BY_ID.match(item):
                result.append(item)
                continue
            kind, sep, rest = item.partition(":")
            kinds: tuple[str, ...] = ("user", "group")
            if sep and kind in kinds:
                wanted, kinds = rest.strip().lower(), (kind,)
            else:
                wanted = item.lower()
            found = None
            if "user" in kinds and wanted in users:
                found = f"user:{users[wanted]}"
            elif "group" in kinds:
                if groups is None:
                    groups = await self._groups()
                if wanted in groups:
                    found = f"group:{groups[wanted]}"
            if found is None:
                raise errors.InvalidData(
                    f"[{name}]: no {' or '.join(kinds)} named {item!r} in this vault"
                )
            result.append(found)
        return ",".join(result)

    async def _users(self) -> dict[str, int]:
        users: dict[str, int] = {}
        if self._client.user_id is not None:
            users[self._client.username.lower()] = self._client.user_id
        try:
            records = await self._client.list_users()
        except (errors.MalformedUrl, errors.MethodNotSupported, errors.InsufficientAccess) as exc:
            log.info("the vault lists no users (%s): only ids and this user's name", exc.type)
            return users
        for record in records:
            try:
                user_id = int(record["id"])
            except (KeyError, TypeError, ValueError):
                continue
            for field in ("user_name__v", "user_email__v"):
                if record.get(field):
                    users.setdefault(str(record[field]).lower(), user_id)
        return users

    async def _groups(self) -> dict[str, int]:
        groups: dict[str, int] = {}
        for record in await self._client.list_groups():
            try:
                group_id = int(record["id"])
            except (KeyError, TypeError, ValueError):
                continue
            for field in ("name__v", "label__v"):
                if record.get(field):
                    groups.setdefault(str(record[field]).lower(), group_id)
        return groups
