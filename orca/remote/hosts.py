"""This client's key pair and the remote hosts it knows (pinned like ssh's known_hosts).

- ``keys/client.key_secret`` (0600, in the 0700 ``keys/``): the client key pair, created
  on first use (``orca host key`` prints its public half). Separate from the host pair
  (``orca.keys.host_keys``): a machine's identity as a server and as a client differ.
- ``remote-hosts.json`` (0600): ``{name: {endpoint, serverKey}}`` for a ``tcp://`` host,
  ``{name: {ssh: {destination, port?, config?, orca, remoteSocket}, serverKey}}`` for an
  SSH host (``orca.remote.ssh``: its endpoint is the local end of the ssh forward, which
  the gateway keeps up). The server key given to (or fetched by) ``orca host add`` is
  pinned: every connection is a CURVE client of exactly that key, so a different
  server at that address (or a man in the middle) fails the handshake and nothing is
  sent to it.

Link liveness: ZeroMQ heartbeats (ZMTP PING/PONG) on every socket to a remote host,
``ZMQ_HEARTBEAT_IVL`` 5 s and ``ZMQ_HEARTBEAT_TIMEOUT`` 20 s by default
(``ORCA_REMOTE_HEARTBEAT_IVL_S`` / ``ORCA_REMOTE_HEARTBEAT_TIMEOUT_S`` override them,
tests shorten them): a silent link is dropped and reconnected instead of hanging.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import zmq

from orca import fsio, keys
from orca.keys import CurveClient, KeyFileError, KeyPair
from orca.model.hosts import runtime_host_id, ssh_host_id
from orca.remote import known_hosts_path
from orca.remote.ssh import SshConfigError, SshTarget, forward_endpoint

if TYPE_CHECKING:
    from orca.paths import OrcaPaths

CLIENT_SECRET_FILE = "client.key_secret"
HEARTBEAT_IVL_ENV = "ORCA_REMOTE_HEARTBEAT_IVL_S"
HEARTBEAT_TIMEOUT_ENV = "ORCA_REMOTE_HEARTBEAT_TIMEOUT_S"
# The defaults: a PING every 5 s; no traffic for 20 s drops the connection.
DEFAULT_HEARTBEAT_IVL_S = 5.0
DEFAULT_HEARTBEAT_TIMEOUT_S = 20.0
MAX_KNOWN_HOSTS = 64
# Largest message a remote host may send us (a state snapshot is a few MB): libzmq drops
# the connection on a bigger one instead of buffering it.
REMOTE_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_KNOWN_HOSTS_MAX_BYTES = 256 * 1024
_HOST_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,62}")
_ENDPOINT = re.compile(r"tcp://([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:]{2,39}\]):([0-9]{1,5})")


class HostConfigError(ValueError):
    """A host name, endpoint or key the user gave is not acceptable; the message says why."""


@dataclass(frozen=True)
class RemoteHost:
    name: str
    endpoint: str
    server_key: bytes
    ssh: SshTarget | None = None  # reached over ssh: ``endpoint`` is the forward's local end

    @property
    def host_id(self) -> str:
        """The execution host id every row of this host is labelled with: an SSH target
        (``ssh:<encoded name>``) or a remote runtime (``runtime:<encoded name>``)."""
        return ssh_host_id(self.name) if self.ssh is not None else runtime_host_id(self.name)

    def target_record(self) -> dict[str, Any] | None:
        """An SSH host as one of the state's ``sshTargets`` (seed 02 §2, wire names;
        ``orca.model.ssh_target``): id = label = its name, so its rows' host id
        ``ssh:<name>`` names it. None for a ``tcp://`` host."""
        if self.ssh is None:
            return None
        return {"id": self.name, "label": self.name, "destination": self.ssh.destination,
                "port": self.ssh.port, "configFile": self.ssh.config,
                "remoteOrca": self.ssh.orca}  # fmt: skip

    @property
    def address(self) -> str:
        """Where it is, for messages: ``ssh://…`` or the tcp endpoint."""
        if self.ssh is None:
            return self.endpoint
        return f"ssh {self.ssh.target_id}"


@dataclass(frozen=True)
class Heartbeats:
    interval_s: float
    timeout_s: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Heartbeats:
        def number(name: str, default: float) -> float:
            try:
                value = float(environ.get(name, default))
            except ValueError:
                return default
            return value if 0.05 <= value <= 3600 else default

        ivl = number(HEARTBEAT_IVL_ENV, DEFAULT_HEARTBEAT_IVL_S)
        return cls(ivl, max(ivl, number(HEARTBEAT_TIMEOUT_ENV, DEFAULT_HEARTBEAT_TIMEOUT_S)))

    def apply(self, sock: zmq.Socket[bytes]) -> None:
        sock.setsockopt(zmq.HEARTBEAT_IVL, int(self.interval_s * 1000))
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(self.timeout_s * 1000))
        # The peer drops us too if our PINGs stop (TTL travels in each PING).
        sock.setsockopt(zmq.HEARTBEAT_TTL, int(self.timeout_s * 1000))


@dataclass(frozen=True)
class LinkClient(CurveClient):
    """A CURVE client of a pinned server key that also sets the link's heartbeats."""

    interval_s: float = DEFAULT_HEARTBEAT_IVL_S
    timeout_s: float = DEFAULT_HEARTBEAT_TIMEOUT_S

    def apply(self, sock: zmq.Socket[bytes]) -> None:
        super().apply(sock)
        Heartbeats(self.interval_s, self.timeout_s).apply(sock)
        sock.setsockopt(zmq.MAXMSGSIZE, REMOTE_MAX_MESSAGE_BYTES)


def client_keys(paths: OrcaPaths) -> KeyPair:
    """This machine's client key pair, created (0600 in a 0700 dir) on first use."""
    directory = fsio.ensure_private_dir(keys.keys_dir(paths))
    path = directory / CLIENT_SECRET_FILE
    if not os.path.lexists(path):
        pair = KeyPair.generate()
        keys._publish_once(path, keys._certificate(pair, pair.public))
    found = keys._parse_certificate(keys._read_private(path), path)
    if "public" not in found or "secret" not in found:
        raise KeyFileError(f"{path}: not a CURVE key pair")
    return KeyPair(public=found["public"], secret=found["secret"])


def link_client(paths: OrcaPaths, host: RemoteHost, beats: Heartbeats | None = None) -> LinkClient:
    pair = client_keys(paths)
    beats = beats or Heartbeats.from_env()
    return LinkClient(
        public=pair.public,
        secret=pair.secret,
        server_public=host.server_key,
        interval_s=beats.interval_s,
        timeout_s=beats.timeout_s,
    )


def check_host_name(name: str) -> str:
    if not _HOST_NAME.fullmatch(name) or name == "local":
        raise HostConfigError(
            f"host name {name!r}: letters, digits, '_', '.', '-', starting with a letter"
            " (and not 'local')"
        )
    return name


def check_endpoint(endpoint: str) -> str:
    match = _ENDPOINT.fullmatch(endpoint)
    if match is None or not 1 <= int(match.group(2)) <= 65535:
        raise HostConfigError(f"endpoint {endpoint!r}: expected tcp://ADDRESS:PORT")
    return endpoint


def check_server_key(key: str) -> bytes:
    raw = key.strip().encode("ascii", "replace")
    if not keys.is_z85_key(raw):
        raise HostConfigError(
            "server key: expected the 40-character key `orca host key --server` prints"
        )
    return raw


def _known_hosts_path(paths: OrcaPaths) -> Path:
    return known_hosts_path(paths)


def load_hosts(paths: OrcaPaths) -> dict[str, RemoteHost]:
    """The known hosts; entries that do not validate are skipped (never half-trusted)."""
    path = _known_hosts_path(paths)
    try:
        raw = keys._read_private(path) if path.exists() else b"{}"
    except KeyFileError as exc:
        raise HostConfigError(str(exc)) from None
    if len(raw) >= _KNOWN_HOSTS_MAX_BYTES:
        raise HostConfigError(f"{path}: larger than {_KNOWN_HOSTS_MAX_BYTES} bytes: refused")
    try:
        doc: Any = json.loads(raw or b"{}")
    except ValueError as exc:
        raise HostConfigError(f"{path}: not JSON: {exc}") from None
    hosts: dict[str, RemoteHost] = {}
    if not isinstance(doc, dict):
        return hosts
    for name, entry in list(doc.items())[:MAX_KNOWN_HOSTS]:
        try:
            if "ssh" in entry:
                target = SshTarget.from_json(entry["ssh"])
                hosts[name] = RemoteHost(
                    check_host_name(name),
                    forward_endpoint(paths, name),
                    check_server_key(entry["serverKey"]),
                    target,
                )
                continue
            hosts[name] = RemoteHost(
                check_host_name(name),
                check_endpoint(entry["endpoint"]),
                check_server_key(entry["serverKey"]),
            )
        except (HostConfigError, SshConfigError, KeyError, TypeError, AttributeError):
            continue
    return hosts


def _entry(host: RemoteHost) -> dict[str, Any]:
    if host.ssh is not None:
        return {"ssh": host.ssh.to_json(), "serverKey": host.server_key.decode()}
    return {"endpoint": host.endpoint, "serverKey": host.server_key.decode()}


def save_hosts(paths: OrcaPaths, hosts: Mapping[str, RemoteHost]) -> None:
    doc = {h.name: _entry(h) for h in hosts.values()}
    fsio.ensure_private_dir(paths.data_dir)
    data = json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n"
    fsio.write_atomic(_known_hosts_path(paths), data, mode=fsio.PRIVATE_FILE_MODE)


def add_host(paths: OrcaPaths, name: str, endpoint: str, server_key: str) -> RemoteHost:
    host = RemoteHost(check_host_name(name), check_endpoint(endpoint), check_server_key(server_key))
    return _record(paths, host)


def add_ssh_host(paths: OrcaPaths, name: str, target: SshTarget, server_key: str) -> RemoteHost:
    """Record a host reached over ssh (its endpoint: the forward's local end)."""
    host = RemoteHost(
        check_host_name(name), forward_endpoint(paths, name), check_server_key(server_key), target
    )
    return _record(paths, host)


def _record(paths: OrcaPaths, host: RemoteHost) -> RemoteHost:
    name = host.name
    hosts = load_hosts(paths)
    if len(hosts) >= MAX_KNOWN_HOSTS and name not in hosts:
        raise HostConfigError(f"at most {MAX_KNOWN_HOSTS} remote hosts")
    hosts[name] = host
    save_hosts(paths, hosts)
    return host


def remove_host(paths: OrcaPaths, name: str) -> bool:
    hosts = load_hosts(paths)
    if hosts.pop(name, None) is None:
        return False
    save_hosts(paths, hosts)
    return True


def split_remote_ref(paths: OrcaPaths, ref: str) -> tuple[RemoteHost, str] | None:
    """(host, rest) if ``ref`` is ``HOST:REST`` for a known host, else None (a local ref)."""
    head, sep, rest = ref.partition(":")
    if not sep or not rest or not _HOST_NAME.fullmatch(head):
        return None
    try:
        host = load_hosts(paths).get(head)
    except HostConfigError:
        return None
    return (host, rest) if host is not None else None
