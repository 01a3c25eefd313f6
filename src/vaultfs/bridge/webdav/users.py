"""The WebDAV users of a front beyond loopback: each signs in with their own vault
credentials and is served by a core of their own.

Owns the sign-in of a front that listens beyond loopback (over TLS only: ``serve``).
Every request carries Basic credentials. A user's first request signs them in to the
vault with a client of their own (their own session) and starts their own front
(``front.open_front``): their own core, so they see only what the vault lets them,
and their LOCK of a document another user holds is the vault's refusal, 423 naming
the holder. Later requests are checked against a keyed digest of the password kept
in memory (HMAC under a key made at start, never written): no call per request. A
password other than the one signed in with is asked of the vault again (it may have
changed); one the vault refuses is 401. Their name, password and session never reach
disk or a log: a user's directory (content cache, spool, lock marks: a save is
durable before its answer) is named by a hash of the vault and name, their index is
kept in memory, a directory made for a sign-in that failed is removed, and a filter
on the log handlers writes every signed-in name as ``<webdav user>``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import os
import shutil
from collections import defaultdict
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path

import trio

from vaultfs import errors
from vaultfs.bridge.webdav.config import WebdavConfig
from vaultfs.bridge.webdav.front import UserFront, open_front
from vaultfs.client import Credentials, VaultClient

__all__ = ["SignInNeeded", "Users"]

log = logging.getLogger(__name__)

#: login tries of a sign-in: a WebDAV client waits for the answer
_LOGIN_RETRIES = 2
#: what a signed-in name is written as in the log
_REDACTED = "<webdav user>"


class SignInNeeded(Exception):
    """No credentials, or credentials the vault refused (answered 401)."""


class Users:
    """The signed-in users of one front: their fronts run in ``nursery`` and what they
    own is given back when ``stack`` closes."""

    def __init__(self, config: WebdavConfig, stack: AsyncExitStack, nursery: trio.Nursery):
        self._config = config
        self._stack = stack
        self._nursery = nursery
        self._key = os.urandom(32)
        self._fronts: dict[str, UserFront] = {}
        self._digests: dict[str, bytes] = {}
        self._starting: defaultdict[str, trio.Lock] = defaultdict(trio.Lock)
        self._redact = _Redact()
        for handler in logging.getLogger().handlers:
            handler.addFilter(self._redact)
        stack.callback(self._unfilter)

    def _unfilter(self) -> None:
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self._redact)

    async def front_of(self, authorization: str | None) -> UserFront:
        """The front of the user whose Basic ``authorization`` this is, signed in now
        when not yet; ``SignInNeeded`` when none or refused."""
        user, password = _basic(authorization)
        digest = hmac.new(self._key, f"{user}\0{password}".encode(), hashlib.sha256).digest()
        front = self._fronts.get(user)
        if front is not None and hmac.compare_digest(self._digests[user], digest):
            return front
        starting = self._starting[user]
        try:
            async with starting:
                front = self._fronts.get(user)
                if front is None:
                    front = await self._sign_in(user, password)
                elif not hmac.compare_digest(self._digests[user], digest):
                    await self._check(user, password)
                self._digests[user] = digest
        finally:
            if starting.statistics().tasks_waiting == 0:
                self._starting.pop(user, None)  # no name a sign-in tried is kept
        return front

    async def _sign_in(self, user: str, password: str) -> UserFront:
        config = replace(
            self._config, user=user, password=password, users=False, cache_dir=self._dir(user)
        )
        made = not config.cache_dir.exists()
        self._redact.names.add(user)
        stack = AsyncExitStack()
        try:
            front = await open_front(stack, config, self._nursery, in_memory=True)
        except BaseException as exc:
            await stack.aclose()
            if made:
                shutil.rmtree(config.cache_dir, ignore_errors=True)
            self._redact.names.discard(user)
            if isinstance(exc, errors.UsernameOrPasswordIncorrect):
                raise SignInNeeded("user name or password incorrect") from None
            raise
        self._stack.push_async_callback(stack.aclose)
        self._fronts[user] = front
        log.info("webdav: a user signed in (vault user id %s)", front.client.user_id)
        return front

    async def _check(self, user: str, password: str) -> None:
        """Another password of a signed-in user: taken when the vault takes it."""
        credentials = Credentials(user, password)
        try:
            async with VaultClient(
                self._config.url, credentials, max_retries=_LOGIN_RETRIES
            ) as probe:
                await probe.login(max_retries=_LOGIN_RETRIES)
        except errors.UsernameOrPasswordIncorrect:
            raise SignInNeeded("user name or password incorrect") from None

    def _dir(self, user: str) -> Path:
        name = hashlib.sha256(f"{self._config.url}\0{user}".encode()).hexdigest()[:16]
        return self._config.cache_dir / "users" / name

    async def stop(self) -> None:
        """Every user's front stops (pending check-ins get their last chance)."""
        async with trio.open_nursery() as nursery:
            for front in self._fronts.values():
                nursery.start_soon(front.stop)


def _basic(authorization: str | None) -> tuple[str, str]:
    """The user name and password of a Basic ``Authorization`` header."""
    scheme, _, encoded = (authorization or "").partition(" ")
    if scheme.lower() != "basic":
        raise SignInNeeded("no credentials")
    try:
        user, sep, password = (
            base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
        )
    except (binascii.Error, UnicodeDecodeError):
        raise SignInNeeded("credentials not readable") from None
    if not sep or not user or not password:
        raise SignInNeeded("no user name or no password")
    return user, password


class _Redact(logging.Filter):
    """Every signed-in name in a log record's arguments written as ``_REDACTED``."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.names and isinstance(record.args, tuple):
            record.args = tuple(
                _REDACTED if isinstance(arg, str) and arg in self.names else arg
                for arg in record.args
            )
        return True
