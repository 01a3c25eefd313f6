"""Lifecycle actions of a document's latest version: what is offered, and starting one.

``describe`` answers what ``getfattr -n user.vault.actions`` shows: one call for the
actions, one per action that has entry requirements, kept ``TTL`` seconds at most (a
``getxattr`` asks twice, for the size and for the value) and dropped when the index
sees the document change. ``start`` takes what ``setfattr -n user.vault.action``
writes: an action name, or a JSON object ``{"action": NAME, "params": {...}}`` whose
params are the WorkflowActivation values (dates ``YYYY-MM-DD``; user/group lists as
``user:ID,group:ID`` or names, see ``principals``). After the vault started the
action the document is read again, so the tree shows the new status (and mode) at
once. The vault's refusal is raised as it is (``vaultfs.errors``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vaultfs import errors
from vaultfs.bridge.lifecycle.principals import Principals
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.tree.versions import latest_version
from vaultfs.client import VaultApi

__all__ = ["TTL", "ActionRequest", "LifecycleActions", "parse_request"]

log = logging.getLogger(__name__)

#: seconds a description of a document's actions is reused (the state changes)
TTL = 5.0
#: requirement scopes whose value is set on the document before the action starts
DOCUMENT_SCOPES = frozenset({"Document", "Binder"})


@dataclass
class ActionRequest:
    action: str
    params: dict[str, Any] = field(default_factory=dict)


def parse_request(value: bytes) -> ActionRequest:
    """What ``setfattr -n user.vault.action`` wrote: a name or a JSON object."""
    try:
        text = value.decode().strip()
    except UnicodeDecodeError:
        raise errors.InvalidData("an action is UTF-8 text") from None
    if text.startswith("{"):
        try:
            body = json.loads(text)
        except ValueError as exc:
            raise errors.InvalidData(f"not a JSON object: {exc}") from None
        action, params = body.get("action"), body.get("params") or {}
        if not isinstance(action, str) or not isinstance(params, dict):
            raise errors.InvalidData('write {"action": NAME, "params": {NAME: VALUE, ...}}')
        return ActionRequest(action.strip(), params)
    if not text:
        raise errors.InvalidData("no action named")
    return ActionRequest(text)


def _met(requirement: dict[str, Any], record: dict[str, Any]) -> bool:
    if requirement.get("scope") not in DOCUMENT_SCOPES:
        return False  # passed when the action starts: never met beforehand
    value = requirement.get("currentSetting", record.get(str(requirement.get("name"))))
    return value not in (None, "", [], {})


def _type(requirement: dict[str, Any]) -> str:
    kind = requirement.get("type")
    if isinstance(kind, list):
        return str(kind[0]) if kind else ""
    return str(kind or "")


def requirement_entry(requirement: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    scope = str(requirement.get("scope") or "")
    entry: dict[str, Any] = {
        "name": requirement.get("name"),
        "description": requirement.get("description"),
        "type": _type(requirement),
        "scope": scope,
        "required": bool(requirement.get("required")),
        "currentSetting": requirement.get("currentSetting"),
        "met": _met(requirement, record),
        # where the value goes: set on the document first, or sent with the action
        "given": "document" if scope in DOCUMENT_SCOPES else "with the action",
    }
    for extra in ("repeating", "values", "objectTypeReferenced"):
        if extra in requirement:
            entry[extra] = requirement[extra]
    return entry


class LifecycleActions:
    def __init__(
        self, tree: Tree, client: VaultApi, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.tree = tree
        self.client = client
        self.principals = Principals(client)
        self._clock = clock
        #: doc id -> (when, description)
        self._cache: dict[int, tuple[float, dict[str, Any]]] = {}
        tree.index.on_change.append(self.forget)

    def forget(self, doc_id: int) -> None:
        self._cache.pop(doc_id, None)

    def _version(self, doc_id: int) -> tuple[int, int]:
        version = latest_version(self.tree.record(doc_id))
        if version is None:
            raise errors.InvalidDocument(f"document {doc_id} has no version numbers")
        return version

    async def describe(self, doc_id: int) -> dict[str, Any]:
        """The actions offered on the latest version, with their entry requirements."""
        cached = self._cache.get(doc_id)
        if cached is not None and self._clock() - cached[0] < TTL:
            return cached[1]
        record = self.tree.record(doc_id)
        major, minor = self._version(doc_id)
        actions = []
        for action in await self.client.lifecycle_actions(doc_id, major, minor):
            name = str(action.get("name__v") or "")
            requirements: list[dict[str, Any]] = []
            if action.get("entry_requirements__v"):
                requirements = await self.client.entry_requirements(doc_id, major, minor, name)
            actions.append(
                {
                    "name": name,
                    "label": action.get("label__v"),
                    "type": action.get("lifecycle_action_type__v"),
                    "requirements": [requirement_entry(r, record) for r in requirements],
                }
            )
        description = {
            "id": doc_id,
            "version": f"{major}.{minor}",
            "status__v": record.get("status__v"),
            "actions": actions,
        }
        self._cache[doc_id] = (self._clock(), description)
        return description

    async def start(self, doc_id: int, request: ActionRequest) -> dict[str, Any]:
        """Start ``request.action`` on the latest version; returns the vault's answer."""
        major, minor = self._version(doc_id)
        form = await self._form(doc_id, major, minor, request)
        self.forget(doc_id)
        answer = await self.client.start_action(doc_id, major, minor, request.action, form)
        log.info(
            "document %d: lifecycle action %s started on version %d.%d%s",
            doc_id,
            request.action,
            major,
            minor,
            f" (workflow {answer['workflow_id__v']})" if answer.get("workflow_id__v") else "",
        )
        # The action changed the version's state: show it now, not at the next poll.
        self.tree.invalidate(doc_id)
        await self.tree.reload(doc_id)
        return answer

    async def _form(
        self, doc_id: int, major: int, minor: int, request: ActionRequest
    ) -> dict[str, str]:
        """The WorkflowActivation values as form text; user/group names become ids
        (the requirement's type, one call, says which values are such lists)."""
        if not request.params:
            return {}
        kinds: dict[str, str] = {}
        if any(isinstance(v, list) or not _plain(v) for v in request.params.values()):
            for requirement in await self.client.entry_requirements(
                doc_id, major, minor, request.action
            ):
                kinds[str(requirement.get("name"))] = _type(requirement)
        form: dict[str, str] = {}
        for name, value in request.params.items():
            if kinds.get(name) == "ObjectReference":
                form[name] = await self.principals.resolve(name, value)
            elif isinstance(value, list):
                form[name] = ",".join(str(v) for v in value)
            elif isinstance(value, bool):
                form[name] = "true" if value else "false"
            else:
                form[name] = "" if value is None else str(value)
        return form


def _plain(value: Any) -> bool:
    """A value that needs no translation: numbers, dates, ``user:ID`` lists."""
    if not isinstance(value, str):
        return True
    items = [item.strip() for item in value.split(",") if item.strip()]
    return all(
        item.replace("-", "").isdigit()
        or (item.partition(":")[0] in ("user", "group") and item.partition(":")[2].isdigit())
        for item in items
    )
