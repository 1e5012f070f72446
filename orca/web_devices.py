"""``web/devices.json``: the devices that may use the web dashboard (issue 27).

One record per paired browser: its id, a name, its scopes (``view``, ``type``,
``approve``: ``orca.contracts.web``) and the SHA-256 of its secret - never the secret,
which only the browser holds, in an HttpOnly cookie (``<deviceId>.<secret>``). The file
is 0600 in a 0700 directory (``orca.fsio``: checked for owner and mode), replaced
atomically.

One writer at a time: the web actor holds ``devices.lock`` (an ``flock``, released by
the kernel when it dies) for as long as it runs, and is then the only one to write the
file; ``orca web devices revoke`` asks it (``web.revoke``). When no web actor runs, the
CLI takes the lock itself and edits the file, so a lost phone can be revoked before the
dashboard ever starts again. Shared by the actor and the CLI: no trio, nothing from
``actors/``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from orca.contracts.web import SCOPES, Device, Scope
from orca.fsio import FileLock, LockHeld, ensure_private_dir, write_atomic

DIR_NAME = "web"
FILE_NAME = "devices.json"
LOCK_NAME = "devices.lock"
FORMAT_VERSION = 1
SECRET_BYTES = 32
# Bounds the file and the work of one credential check; far above one person's browsers.
MAX_DEVICES = 64


class DevicesFileError(ValueError):
    """``devices.json`` is not a device list this build can read (left as it is)."""


@dataclass(frozen=True)
class DeviceRecord:
    device_id: str
    name: str
    scopes: tuple[Scope, ...]
    secret_sha256: str
    created_at_ms: int
    last_seen_ms: int

    def to_wire(self) -> Device:
        return Device(
            device_id=self.device_id,
            name=self.name,
            scopes=list(self.scopes),
            created_at_ms=self.created_at_ms,
            last_seen_ms=self.last_seen_ms,
        )


def web_dir(data_dir: Path) -> Path:
    return data_dir / DIR_NAME


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_device(name: str, scopes: tuple[Scope, ...], now_ms: int) -> tuple[DeviceRecord, str]:
    """A record and the credential only its browser will hold."""
    device_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(SECRET_BYTES)
    record = DeviceRecord(device_id, name, scopes, digest(secret), now_ms, now_ms)
    return record, f"{device_id}.{secret}"


def matches(record: DeviceRecord, credential: str) -> bool:
    """Whether ``credential`` is this device's (constant time in the secret)."""
    device_id, _, secret = credential.partition(".")
    return device_id == record.device_id and hmac.compare_digest(
        digest(secret), record.secret_sha256
    )


def _record(raw: Any) -> DeviceRecord:
    if not isinstance(raw, dict):
        raise DevicesFileError("a device is not an object")
    scopes = raw.get("scopes")
    if not isinstance(scopes, list) or not all(s in SCOPES for s in scopes):
        raise DevicesFileError(f"device {raw.get('deviceId')!r}: bad scopes {scopes!r}")
    try:
        return DeviceRecord(
            device_id=str(raw["deviceId"]),
            name=str(raw["name"]),
            scopes=cast("tuple[Scope, ...]", tuple(scopes)),
            secret_sha256=str(raw["secretSha256"]),
            created_at_ms=int(raw["createdAtMs"]),
            last_seen_ms=int(raw["lastSeenMs"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DevicesFileError(f"a device lacks {exc}") from None


def _camel(record: DeviceRecord) -> dict[str, Any]:
    raw = asdict(record)
    return {
        "deviceId": raw["device_id"],
        "name": raw["name"],
        "scopes": list(raw["scopes"]),
        "secretSha256": raw["secret_sha256"],
        "createdAtMs": raw["created_at_ms"],
        "lastSeenMs": raw["last_seen_ms"],
    }


class DevicesFile:
    """The file and its writer lock (``acquire`` before ``save``)."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = web_dir(data_dir)
        self.path = self.dir / FILE_NAME
        self._lock = FileLock(self.dir / LOCK_NAME)

    def acquire(self) -> None:
        """Become the writer (raises ``LockHeld`` while a web actor runs)."""
        ensure_private_dir(self.dir)
        self._lock.acquire(f"{os.getpid()}\n".encode())

    def try_acquire(self) -> bool:
        try:
            self.acquire()
        except LockHeld:
            return False
        return True

    def release(self) -> None:
        self._lock.release()

    def load(self) -> list[DeviceRecord]:
        """The devices; none when there is no file yet (raises ``DevicesFileError``)."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise DevicesFileError(f"{self.path}: cannot be read: {exc}") from None
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise DevicesFileError(f"{self.path}: not JSON: {exc}") from None
        if not isinstance(raw, dict) or raw.get("version") != FORMAT_VERSION:
            raise DevicesFileError(f"{self.path}: not a version {FORMAT_VERSION} device list")
        devices = raw.get("devices")
        if not isinstance(devices, list):
            raise DevicesFileError(f"{self.path}: devices is not a list")
        return [_record(d) for d in devices]

    def save(self, devices: list[DeviceRecord]) -> None:
        assert self._lock.held, "only the lock's holder writes the devices file"
        body = {"version": FORMAT_VERSION, "devices": [_camel(d) for d in devices]}
        write_atomic(self.path, (json.dumps(body, indent=2) + "\n").encode(), private_parent=True)
