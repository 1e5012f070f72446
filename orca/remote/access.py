"""The gateway's authorized clients: one key file per client, each read-only or full.

Layout, under the data dir: ``gateway-clients/`` (0700, owner checked on every read)
holding ``<name>.key`` files (0600): ZeroMQ certificate text (the format
``zmq.auth.load_certificate`` reads) with the client's public key and one metadata
line, ``access = "read-only"`` or ``access = "full"``. A file that is not ours, too
open, not a key, or names an unknown access level authorizes nobody (fail closed).

This directory is separate from ``authorized-keys/`` (``orca.keys``): those keys reach
every actor's loopback endpoint with full rights; gateway clients reach only what the
gateway relays, at their level.

``AccessTable`` re-reads the directory when its mtime changes, so a ``revoke`` (an
unlink) or an ``authorize`` (an atomic rename) takes effect at the next request, not
only at the next handshake.
"""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orca import fsio, keys
from orca.contracts.gateway import Access

if TYPE_CHECKING:
    from orca.paths import OrcaPaths

CLIENTS_DIR = "gateway-clients"
_ACCESS_LINE = re.compile(rb'^\s*access\s*=\s*"([^"]*)"\s*$', re.MULTILINE)
_PUBLIC_LINE = re.compile(rb'^\s*public-key\s*=\s*"([^"]*)"\s*$', re.MULTILINE)
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_MAX_FILE = 4096
# More files than this in the directory: read the first ones only (bounds a handshake).
MAX_CLIENTS = 1000
# Directory mtimes are coarse (a clock tick): also re-read after this long, so a revoke
# within the tick of the previous read still takes effect within this bound.
REREAD_AFTER_S = 0.5


@dataclass(frozen=True)
class Client:
    name: str
    public: bytes
    access: Access


def clients_dir(paths: OrcaPaths) -> Path:
    return paths.data_dir / CLIENTS_DIR


def check_name(name: str) -> str:
    if not _NAME_RE.fullmatch(name):
        raise ValueError(f"client name {name!r} must match {_NAME_RE.pattern}")
    return name


def _read_private(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None
        return os.read(fd, _MAX_FILE)
    finally:
        os.close(fd)


def parse_client_file(name: str, raw: bytes) -> Client | None:
    public = _PUBLIC_LINE.search(raw)
    access = _ACCESS_LINE.search(raw)
    if public is None or access is None or not keys.is_z85_key(public.group(1)):
        return None
    level = access.group(1).decode("ascii", "replace")
    if level == "full":
        return Client(name, public.group(1), "full")
    if level == "read-only":
        return Client(name, public.group(1), "read-only")
    return None


def _dir_ok(directory: Path) -> os.stat_result | None:
    try:
        st = directory.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return None
    return st


def load_clients(paths: OrcaPaths) -> dict[bytes, Client]:
    """Every authorized client by public key (empty if the directory is unsafe)."""
    directory = clients_dir(paths)
    if _dir_ok(directory) is None:
        return {}
    found: dict[bytes, Client] = {}
    try:
        entries = sorted(directory.glob("*.key"))[:MAX_CLIENTS]
    except OSError:
        return {}
    for entry in entries:
        raw = _read_private(entry)
        client = parse_client_file(entry.stem, raw) if raw is not None else None
        if client is not None:
            found[client.public] = client
    return found


def authorize(paths: OrcaPaths, public: bytes, name: str, access: Access) -> Path:
    """Write ``gateway-clients/<name>.key`` (0600, atomic) for the key ``public``."""
    if not keys.is_z85_key(public):
        raise ValueError("not a Z85 CURVE public key (40 characters)")
    check_name(name)
    directory = fsio.ensure_private_dir(clients_dir(paths))
    text = (
        b"#   ZeroMQ CURVE certificate of an Orca gateway client\n"
        b"metadata\n"
        b'    access = "' + access.encode() + b'"\n'
        b"curve\n"
        b'    public-key = "' + public + b'"\n'
    )
    path = directory / f"{name}.key"
    fsio.write_atomic(path, text, mode=fsio.PRIVATE_FILE_MODE)
    return path


def revoke(paths: OrcaPaths, ref: str) -> list[str]:
    """Remove the client files named ``ref`` or holding the key ``ref``; their names."""
    removed = []
    for public, client in load_clients(paths).items():
        if client.name == ref or public == ref.encode():
            (clients_dir(paths) / f"{client.name}.key").unlink(missing_ok=True)
            removed.append(client.name)
    if removed:
        fsio.fsync_dir(clients_dir(paths))
    return removed


class AccessTable:
    """The authorized clients, re-read when the directory changes (cheap per request)."""

    def __init__(self, paths: OrcaPaths) -> None:
        self.paths = paths
        self._stamp: tuple[int, int, int] | None = None
        self._clients: dict[bytes, Client] = {}
        self._read_at = 0.0

    def lookup(self, public: bytes) -> Client | None:
        st = _dir_ok(clients_dir(self.paths))
        if st is None:
            self._stamp, self._clients = None, {}
            return None
        stamp = (st.st_ino, st.st_mtime_ns, st.st_nlink)
        now = time.monotonic()
        if stamp != self._stamp or now - self._read_at > REREAD_AFTER_S:
            self._clients = load_clients(self.paths)
            self._stamp, self._read_at = stamp, now
        return self._clients.get(public)
