"""CURVE key files: the host's key pair and the directory of authorized client keys.

Everything Orca serves on ``tcp://`` (loopback included) is a CURVE server (issue 16
item 1): a peer must know the host's public key *and* hold a secret key whose public
half is authorized here, or the handshake fails before a single request is read.

Layout, under the data dir (``orca.paths.OrcaPaths.data_dir``):

- ``keys/host.key_secret`` (0600, in a 0700 dir): the host's key pair, created on first
  use with ``zmq.curve_keypair()``. Every actor of the host serves with it. The format is
  ZeroMQ's certificate text (``zmq.auth.load_certificate`` reads it too).
- ``keys/host.key`` (0600): the public half alone, to hand to clients.
- ``authorized-keys/`` (0700): one client public key per file (``*.key``): either the
  40-character Z85 key alone or a ZeroMQ certificate's ``public-key = "..."`` line.
  Read on every handshake, so adding or removing a file takes effect at once.

Creation is race-free between the actors of one host starting together: the pair is
written to a temp file and published with ``link`` (which never replaces), so every
process ends up with the one pair that won.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import zmq
import zmq.utils.z85

from orca import fsio

if TYPE_CHECKING:
    from orca.paths import OrcaPaths

KEYS_DIR = "keys"
AUTHORIZED_DIR = "authorized-keys"
HOST_SECRET_FILE = "host.key_secret"
HOST_PUBLIC_FILE = "host.key"
AUTHORIZED_SUFFIX = ".key"
# Z85 of a 32-byte key is 40 characters; a key file is a few lines, never more than this.
Z85_KEY_LEN = 40
_KEY_FILE_MAX = 4096
_Z85_KEY = re.compile(rb"[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}")
_CERT_LINE = re.compile(rb'^\s*(public|secret)-key\s*=\s*"([^"]*)"\s*$', re.MULTILINE)
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class KeyFileError(OSError):
    """A key file is missing, unsafe (not ours, too open) or not a key; the message says which."""


@dataclass(frozen=True)
class KeyPair:
    """A CURVE key pair, both halves Z85-encoded (40 bytes each)."""

    public: bytes
    secret: bytes

    @classmethod
    def generate(cls) -> KeyPair:
        public, secret = zmq.curve_keypair()
        return cls(public=public, secret=secret)


@dataclass(frozen=True)
class CurveClient:
    """What a client needs to connect to a CURVE server: its own pair, the server's public key."""

    public: bytes
    secret: bytes
    server_public: bytes

    @classmethod
    def for_server(cls, pair: KeyPair, server_public: bytes) -> CurveClient:
        return cls(public=pair.public, secret=pair.secret, server_public=server_public)

    def apply(self, sock: zmq.Socket[bytes]) -> None:
        """Make ``sock`` a CURVE client (before ``connect``)."""
        sock.setsockopt(zmq.CURVE_PUBLICKEY, self.public)
        sock.setsockopt(zmq.CURVE_SECRETKEY, self.secret)
        sock.setsockopt(zmq.CURVE_SERVERKEY, self.server_public)


def is_z85_key(key: bytes) -> bool:
    if not _Z85_KEY.fullmatch(key):
        return False
    try:
        return len(zmq.utils.z85.decode(key)) == 32
    except ValueError:
        return False


def keys_dir(paths: OrcaPaths) -> Path:
    return paths.data_dir / KEYS_DIR


def authorized_dir(paths: OrcaPaths) -> Path:
    return paths.data_dir / AUTHORIZED_DIR


def _read_private(path: Path) -> bytes:
    """``path``'s bytes, if it is a regular file we own with no group/other access."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read key file: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise KeyFileError(f"{path}: not a regular file owned by us: refused")
        if st.st_mode & 0o077:
            raise KeyFileError(f"{path}: mode {st.st_mode & 0o777:o}, not 0600: refused")
        return os.read(fd, _KEY_FILE_MAX)
    finally:
        os.close(fd)


def _parse_certificate(raw: bytes, path: Path) -> dict[str, bytes]:
    found = {kind.decode(): value for kind, value in _CERT_LINE.findall(raw)}
    for kind, value in found.items():
        if not is_z85_key(value):
            raise KeyFileError(f"{path}: {kind}-key is not a Z85 CURVE key")
    return found


def _certificate(pair: KeyPair | None, public: bytes) -> bytes:
    lines = [b"#   ZeroMQ CURVE certificate written by Orca", b"metadata", b"curve"]
    lines.append(b'    public-key = "' + public + b'"')
    if pair is not None:
        lines.append(b'    secret-key = "' + pair.secret + b'"')
    return b"\n".join(lines) + b"\n"


def _publish_once(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data`` unless it exists (atomic, durable, 0600)."""
    tmp = fsio.write_temp(path, data, mode=fsio.PRIVATE_FILE_MODE)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    fsio.fsync_dir(path.parent)
    return True


def host_keys(paths: OrcaPaths) -> KeyPair:
    """The host's CURVE key pair, created (0600, in a 0700 dir) on first use."""
    directory = fsio.ensure_private_dir(keys_dir(paths))
    secret_path = directory / HOST_SECRET_FILE
    if not os.path.lexists(secret_path):
        pair = KeyPair.generate()
        _publish_once(secret_path, _certificate(pair, pair.public))
    found = _parse_certificate(_read_private(secret_path), secret_path)
    if "public" not in found or "secret" not in found:
        raise KeyFileError(f"{secret_path}: not a CURVE key pair")
    pair = KeyPair(public=found["public"], secret=found["secret"])
    public_path = directory / HOST_PUBLIC_FILE
    if not os.path.lexists(public_path):
        _publish_once(public_path, _certificate(None, pair.public))
    return pair


def host_public_key(paths: OrcaPaths) -> bytes:
    """The host's public key (what a client passes as ``server_public``)."""
    return host_keys(paths).public


def authorize(paths: OrcaPaths, public: bytes, name: str) -> Path:
    """Authorize the client key ``public`` as ``authorized-keys/<name>.key`` (0600)."""
    if not is_z85_key(public):
        raise ValueError("not a Z85 CURVE public key")
    if not _NAME_RE.fullmatch(name):
        raise ValueError(f"key name {name!r} must match {_NAME_RE.pattern}")
    directory = fsio.ensure_private_dir(authorized_dir(paths))
    path = directory / f"{name}{AUTHORIZED_SUFFIX}"
    fsio.write_atomic(path, _certificate(None, public))
    return path


def read_authorized_key(path: Path) -> bytes | None:
    """The public key in one authorized-keys file, or None if it holds none (or is unsafe)."""
    try:
        raw = _read_private(path)
    except KeyFileError:
        return None
    stripped = raw.strip()
    if is_z85_key(stripped):
        return stripped
    try:
        return _parse_certificate(raw, path).get("public")
    except KeyFileError:
        return None


def is_authorized(paths: OrcaPaths, public: bytes) -> bool:
    """Whether the client key ``public`` (Z85) has a file in ``authorized-keys/``.

    The directory must be ours and private; anything else authorizes nobody."""
    directory = authorized_dir(paths)
    try:
        st = directory.lstat()
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return False
    try:
        entries = list(directory.glob(f"*{AUTHORIZED_SUFFIX}"))
    except OSError:
        return False
    return any(read_authorized_key(entry) == public for entry in entries)
