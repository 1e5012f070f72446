"""The web actor's one authority: which devices may use the dashboard, and how they pair.

A browser becomes a device in one of two ways, both a single exchange that sets its
cookie (``actors.web.guard``):

* a **pairing code** (``web.pair``, ``orca web pair`` / ``--open``): random, one-time,
  short-lived (minutes), held in memory only, carrying the scopes the user chose; it
  reaches the browser in a URL fragment (shown as a QR code in the terminal);
* the **login token** of web.toml (required off loopback): a device with every scope.

Each device's credential is checked in constant time against the SHA-256 kept in
``devices.json`` (``orca.web_devices``); revoking one removes it, and every request and
open socket re-checks its device, so a revoked phone loses its terminals at once.
Wrong codes and tokens are counted per client address: after ``MAX_FAILURES`` in
``FAILURE_WINDOW_MS`` from one address, that address's token logins and wrong codes are
refused for the rest of the window (:class:`Throttled`: guessing is slowed). A valid
pairing code is never refused: it is a random secret the owner just made, far beyond
guessing, so no one else's wrong guesses can lock the owner out (issue 33: any local
user could, with one global counter). The addresses remembered are bounded.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace

from orca.contracts.web import SCOPES, Scope
from orca.web_devices import MAX_DEVICES, DeviceRecord, DevicesFile, digest, matches, new_device

log = logging.getLogger(__name__)

MAX_FAILURES = 20
FAILURE_WINDOW_MS = 60_000
MAX_CLIENTS_TRACKED = 1024
MAX_PENDING_PAIRINGS = 16
# last-seen times are saved at most this often (they are for `orca web devices`).
TOUCH_SAVE_MS = 60_000


class TooManyDevices(Exception):
    pass


class Throttled(Exception):
    """Too many wrong codes or tokens from this client lately."""


@dataclass(frozen=True)
class _Pairing:
    name: str
    scopes: tuple[Scope, ...]
    expires_at_ms: int


class Access:
    """Devices (persisted, this process the sole writer) and pairing codes (in memory)."""

    def __init__(self, file: DevicesFile, token: str, clock_ms: Callable[[], int]) -> None:
        self._file = file
        self._token = token
        self._clock_ms = clock_ms
        self._devices: dict[str, DeviceRecord] = {}
        self._pairings: dict[str, _Pairing] = {}  # by the code's digest
        self._failures: dict[str, list[int]] = {}  # by client address, oldest first
        self._saved_at = 0

    def load(self) -> None:
        """Take the writer lock and read the devices (raises LockHeld, DevicesFileError)."""
        self._file.acquire()
        self._devices = {d.device_id: d for d in self._file.load()}
        self._saved_at = self._clock_ms()

    def close(self) -> None:
        self._save()
        self._file.release()

    def devices(self) -> list[DeviceRecord]:
        return sorted(self._devices.values(), key=lambda d: d.created_at_ms)

    @property
    def pending_pairings(self) -> int:
        self._expire()
        return len(self._pairings)

    # -- pairing ----------------------------------------------------------------------
    def pair(self, name: str, scopes: tuple[Scope, ...], ttl_s: float) -> tuple[str, int]:
        """A one-time code and when it expires (ms)."""
        self._expire()
        while len(self._pairings) >= MAX_PENDING_PAIRINGS:
            del self._pairings[next(iter(self._pairings))]  # the oldest makes room
        code = secrets.token_urlsafe(18)
        expires = self._clock_ms() + int(ttl_s * 1000)
        ordered = tuple(s for s in SCOPES if s in scopes)
        self._pairings[digest(code)] = _Pairing(name, ordered, expires)
        return code, expires

    def redeem(self, code: str, client: str = "") -> tuple[DeviceRecord, str] | None:
        """Trade a pairing code for a new device (its credential); None if it is wrong
        or expired; Throttled when ``client`` guessed wrong too often (a valid code is
        never refused)."""
        self._expire()
        pairing = self._pairings.pop(digest(code), None)
        if pairing is None:
            self._failed(client)
            return None
        return self._add(pairing.name, pairing.scopes)

    def login(self, token: str, name: str, client: str = "") -> tuple[DeviceRecord, str] | None:
        """Trade the configured login token for a device with every scope; None if it is
        wrong; Throttled (even the right one) when ``client`` guessed wrong too often."""
        if self._throttled(client):
            raise Throttled()
        if not self._token or not hmac.compare_digest(token.encode(), self._token.encode()):
            self._failed(client)
            return None
        return self._add(name, SCOPES)

    def _add(self, name: str, scopes: tuple[Scope, ...]) -> tuple[DeviceRecord, str]:
        if len(self._devices) >= MAX_DEVICES:
            raise TooManyDevices(f"{MAX_DEVICES} devices are paired: revoke one first")
        record, credential = new_device(name, scopes, self._clock_ms())
        self._devices[record.device_id] = record
        self._save()
        log.info("paired device %s (%s): %s", record.device_id, name, ",".join(scopes))
        return record, credential

    # -- use ----------------------------------------------------------------------------
    def authenticate(self, credential: str | None) -> DeviceRecord | None:
        """The device this credential is, if it is still paired."""
        if not credential:
            return None
        device = self._devices.get(credential.partition(".")[0])
        if device is None or not matches(device, credential):
            return None
        now = self._clock_ms()
        self._devices[device.device_id] = device = replace(device, last_seen_ms=now)
        if now - self._saved_at >= TOUCH_SAVE_MS:
            self._save()
        return device

    def revoke(self, device_id: str) -> bool:
        """Forget the device now; raises OSError when that cannot be saved (it is gone
        from this run either way, and the caller must hear that a restart would bring
        it back)."""
        if self._devices.pop(device_id, None) is None:
            return False
        log.info("revoked device %s", device_id)
        self._save(strict=True)
        return True

    # -- internals ----------------------------------------------------------------------
    def _save(self, *, strict: bool = False) -> None:
        try:
            self._file.save(self.devices())
            self._saved_at = self._clock_ms()
        except OSError as exc:
            log.error(
                "cannot save %s: %s (devices stay as they are in memory)", self._file.path, exc
            )
            if strict:
                raise

    def _expire(self) -> None:
        now = self._clock_ms()
        for key in [k for k, p in self._pairings.items() if p.expires_at_ms <= now]:
            del self._pairings[key]

    def _failed(self, client: str) -> None:
        """Count a wrong code or token; Throttled once ``client`` has too many."""
        throttled = self._throttled(client)
        failures = self._failures.pop(client, [])
        failures.append(self._clock_ms())
        self._failures[client] = failures[-MAX_FAILURES:]  # (most recent last)
        while len(self._failures) > MAX_CLIENTS_TRACKED:
            del self._failures[next(iter(self._failures))]
        if throttled:
            raise Throttled()

    def _throttled(self, client: str) -> bool:
        start = self._clock_ms() - FAILURE_WINDOW_MS
        recent = [t for t in self._failures.get(client, []) if t > start]
        if recent:
            self._failures[client] = recent
        else:
            self._failures.pop(client, None)
        return len(recent) >= MAX_FAILURES
