"""Users, vault membership, password checks, lockout and sessions.

Passwords are stored as salted scrypt hashes. Session ids are long random tokens;
only their sha256 is stored, so a copy of the database does not hand out sessions.
Consecutive failed password checks are counted per user; reaching the configured
number locks the account until an admin unlocks it (``vaultfs serve-admin unlock``); a
successful login resets the count. Only the right password learns of the lockout
(``USER_LOCKED_OUT``): a wrong one is ``USERNAME_OR_PASSWORD_INCORRECT`` for locked,
unlocked and unknown accounts alike, so the answers tell no user names.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from vaultfs.errors import (
    InsufficientAccess,
    InvalidSessionId,
    UserLockedOut,
    UsernameOrPasswordIncorrect,
)

from .sql import Conn, Row

__all__ = [
    "SessionUser",
    "User",
    "add_user",
    "check_password",
    "end_session",
    "hash_password",
    "login",
    "record_failed_login",
    "resolve_session",
    "token_user",
    "touch_session",
    "unlock_user",
    "user_vaults",
]

# scrypt cost: about 50 ms per check on a small machine.
_SCRYPT_N = 2**14
_SCRYPT_R = 8
_SCRYPT_P = 1


@dataclass(frozen=True)
class User:
    id: int
    username: str
    display_name: str
    role: str
    #: may read the domain information of every vault in the domain
    domain_admin: bool = False


@dataclass(frozen=True)
class SessionUser:
    """The caller of a request: the user and the vault of their session."""

    user: User
    vault_id: int
    token_hash: str
    last_used_ms: int


def hash_password(password: str, salt: bytes) -> str:
    digest = hashlib.scrypt(
        password.encode(), salt=salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P, dklen=32
    )
    return digest.hex()


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _user(row: Row) -> User:
    return User(
        id=row["id"],
        username=row["username"],
        display_name=row["display_name"],
        role=row["role"],
        domain_admin=bool(row["domain_admin"]),
    )


def add_user(
    conn: Conn,
    username: str,
    display_name: str,
    password: str,
    role: str,
    vault_ids: list[int],
) -> int:
    salt = secrets.token_bytes(16)
    cur = conn.execute(
        "INSERT INTO users (username, display_name, password_hash, password_salt, role)"
        " VALUES (?, ?, ?, ?, ?) RETURNING id",
        (username.lower(), display_name, hash_password(password, salt), salt.hex(), role),
    )
    user_id = int(cur.fetchone()[0])
    conn.executemany(
        "INSERT INTO vault_members (vault_id, user_id) VALUES (?, ?)",
        [(vault_id, user_id) for vault_id in vault_ids],
    )
    return user_id


def _locked_out(username: str) -> UserLockedOut:
    return UserLockedOut(
        f"User [{username}] is locked out after repeated failed logins; ask an admin to unlock"
    )


def token_user(conn: Conn, username: str) -> User:
    """The user an identity provider vouched for (no password), unless locked out."""
    row = conn.execute("SELECT * FROM users WHERE username = ?", (username.lower(),)).fetchone()
    if row is None:
        raise UsernameOrPasswordIncorrect("No vault user matches the access token")
    if row["locked_out"]:
        raise _locked_out(username)
    return _user(row)


def check_password(conn: Conn, username: str, password: str) -> User:
    """The user with these credentials (blocking: runs scrypt)."""
    row = conn.execute("SELECT * FROM users WHERE username = ?", (username.lower(),)).fetchone()
    # Hash even for unknown users so timing does not tell which user names exist.
    salt = bytes.fromhex(row["password_salt"]) if row else b"\0" * 16
    computed = hash_password(password, salt)
    if row is None or not hmac.compare_digest(computed, row["password_hash"]):
        raise UsernameOrPasswordIncorrect("Authentication failed for user: " + username)
    if row["locked_out"]:
        raise _locked_out(username)
    return _user(row)


def record_failed_login(conn: Conn, username: str, attempts: int) -> None:
    """Count a failed password check (in its own transaction, which must commit).

    ``attempts`` is the number of consecutive failures that lock (0: never). Unknown
    user names are not recorded (there is no account to lock).
    """
    conn.execute(
        "UPDATE users SET failed_logins = failed_logins + 1,"
        " locked_out = CASE WHEN ? > 0 AND failed_logins + 1 >= ? THEN 1 ELSE 0 END"
        " WHERE username = ?",
        (attempts, attempts, username.lower()),
    )


def unlock_user(conn: Conn, username: str) -> bool:
    """Unlock an account and reset its failure count; False when there is no such user."""
    cur = conn.execute(
        "UPDATE users SET locked_out = 0, failed_logins = 0 WHERE username = ?",
        (username.lower(),),
    )
    return cur.rowcount > 0


def user_vaults(conn: Conn, user_id: int) -> list[Row]:
    """The active vaults the user is a member of, oldest first."""
    return conn.execute(
        "SELECT v.* FROM vaults v JOIN vault_members m ON m.vault_id = v.id"
        " WHERE m.user_id = ? AND v.status = 'Active' ORDER BY v.id",
        (user_id,),
    ).fetchall()


def login(conn: Conn, user: User, wanted_dns: str | None, now: int) -> tuple[str, int, list[Row]]:
    """Issue a session; returns (session id, vault id, the user's active vaults).

    Vault choice follows the spec: the active vault at ``wanted_dns`` when the user is
    a member, else the vault of the last login when still active, else the oldest
    active membership; a successful login also resets the failed-login count.
    """
    vaults = user_vaults(conn, user.id)
    if not vaults:
        raise InsufficientAccess(f"User [{user.username}] is not a member of any active vault")
    by_dns = {row["dns"].lower(): row["id"] for row in vaults}
    last = conn.execute("SELECT last_vault_id FROM users WHERE id = ?", (user.id,)).fetchone()[0]
    ids = {row["id"] for row in vaults}
    if wanted_dns and wanted_dns.lower() in by_dns:
        vault_id = by_dns[wanted_dns.lower()]
    elif last in ids:
        vault_id = last
    else:
        vault_id = vaults[0]["id"]
    token = secrets.token_urlsafe(32)
    conn.execute(
        "INSERT INTO sessions (token_hash, user_id, vault_id, created_ms, last_used_ms)"
        " VALUES (?, ?, ?, ?, ?)",
        (_token_hash(token), user.id, vault_id, now, now),
    )
    conn.execute(
        "UPDATE users SET last_vault_id = ?, failed_logins = 0 WHERE id = ?", (vault_id, user.id)
    )
    return token, vault_id, vaults


def resolve_session(conn: Conn, token: str, now: int, timeout_ms: int) -> SessionUser:
    row = conn.execute(
        "SELECT s.token_hash, s.vault_id, s.last_used_ms, u.*"
        " FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?",
        (_token_hash(token),),
    ).fetchone()
    if row is None or now - row["last_used_ms"] > timeout_ms:
        raise InvalidSessionId("Invalid or expired session ID.")
    return SessionUser(
        user=_user(row),
        vault_id=row["vault_id"],
        token_hash=row["token_hash"],
        last_used_ms=row["last_used_ms"],
    )


def touch_session(conn: Conn, token_hash: str, now: int, timeout_ms: int) -> None:
    """Record activity; also forgets sessions that have timed out."""
    conn.execute("UPDATE sessions SET last_used_ms = ? WHERE token_hash = ?", (now, token_hash))
    conn.execute("DELETE FROM sessions WHERE last_used_ms < ?", (now - timeout_ms,))


def end_session(conn: Conn, token_hash: str) -> None:
    conn.execute("DELETE FROM sessions WHERE token_hash = ?", (token_hash,))
