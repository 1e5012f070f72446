"""Remote hosts over SSH: the user's own ``ssh`` binary, one shared connection, no port.

Essay. A host added as ``ssh://user@host[:port]`` (or a ``Host`` alias of the user's
ssh_config) is reached with the system OpenSSH client, never a transport of ours, so
the user's agent, keys, jump hosts and known_hosts apply as they do for any ``ssh``.
Everything Orca does there rides one connection, a ControlMaster:

- the gateway (``actors/gateway/sshlink.py``) runs the master: ``ssh -M -S <control>
  -L <forward>:<remote gateway socket> TARGET '<orca> host ssh-info && exec cat'``. The
  remote command prints one JSON line (proof the session, the forward and the control
  socket are up: ssh binds them before it opens the session) and then waits on stdin,
  so the connection ends when the gateway does (its pipe closes) or when ssh dies;
- the CLI (``orca host add``, ``orca host status``) runs its commands with
  ``ControlMaster=auto`` on the same control path: over the gateway's master when it
  is up, else on a connection of its own that ends with the command
  (``ControlPersist=no``: no ssh process outlives the command that started it);
- ZeroMQ reaches the remote gateway through the forward: a local Unix socket (mode
  0600 by ``StreamLocalBindMask``, in a 0700 directory we own, both checked) that ssh
  connects, on the remote side, to the gateway's own Unix socket (``gateway.remote``
  in its runtime dir). The remote gateway listens on no TCP port; CURVE stays on inside
  the tunnel (the pinned server key and the authorized client key, as over tcp).

Files, in ``ssh_dir(paths)`` (the runtime dir's ``ssh/``, or a short per-user path
when that would overflow a Unix socket path): ``<h>.c`` (the control socket) and
``<h>.l`` (the forward), ``<h>`` a hash of the host's name.

An ssh failure is read from ssh's exit status and its last words on stderr
(:func:`classify`): refused, auth failed, host key changed or unknown, unreachable,
Orca missing there (the remote command's own exit status), remote tree down.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orca import fsio

if TYPE_CHECKING:
    from orca.paths import OrcaPaths

SSH_BINARY = "ssh"
DEFAULT_REMOTE_ORCA = "orca"
# The remote command's exit status when the Orca command is not found there (the
# shell's own "command not found" is 127 too; ours comes with ORCA_MISSING on stdout).
ORCA_MISSING_EXIT = 127
ORCA_MISSING = "orca-missing"
# Remote installs land here by default (pipx, pip --user); a non-interactive ssh
# session's PATH often lacks it: searched after the user's own PATH.
REMOTE_PATH = '"$PATH:$HOME/.local/bin"'
# Longest name ssh gives the control socket while it makes it (``<path>.`` + 16
# random characters) fits in a Unix socket path with these bounds.
_MAX_SOCKET_PATH = 100
_SSH_TEMP_SUFFIX = 17
_SOCKET_STEM_LEN = 12
# ssh://[user@]host[:port]; user and host in a conservative set (never a leading '-',
# which ssh would read as an option).
_SSH_URL = re.compile(
    r"ssh://(?:(?P<user>[A-Za-z0-9_][A-Za-z0-9_.-]{0,63})@)?"
    r"(?P<host>[A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:]{2,39}\])"
    r"(?::(?P<port>[0-9]{1,5}))?"
)
_ALIAS = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}")

# What went wrong, as ``orca host status`` names it.
SSH_REFUSED = "ssh refused"
AUTH_FAILED = "auth failed"
HOST_KEY_CHANGED = "host key changed"
HOST_KEY_UNKNOWN = "host key unknown"
UNREACHABLE = "unreachable"
ORCA_MISSING_THERE = "Orca missing there"
REMOTE_TREE_DOWN = "remote tree down"
SSH_FAILED = "ssh failed"


class SshConfigError(ValueError):
    """A target, config file or remote command the user gave is not acceptable."""


@dataclass(frozen=True)
class SshTarget:
    """Where and how to reach a host with ssh (persisted with the host)."""

    destination: str  # ``[user@]host`` or a Host alias: ssh's own destination argument
    port: int | None = None
    config: str | None = None  # an ssh_config for ``ssh -F`` (default: the user's own)
    orca: str = DEFAULT_REMOTE_ORCA  # the Orca command on the remote host
    remote_socket: str = ""  # the remote gateway's Unix socket (learned at ``host add``)

    @property
    def target_id(self) -> str:
        """The id of this target (seed 01's ``ssh:<encoded target id>``)."""
        return self.destination + (f":{self.port}" if self.port else "")

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"destination": self.destination, "orca": self.orca}
        if self.port:
            doc["port"] = self.port
        if self.config:
            doc["config"] = self.config
        if self.remote_socket:
            doc["remoteSocket"] = self.remote_socket
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> SshTarget:
        if not isinstance(doc, dict):
            raise SshConfigError("ssh: not a table")
        port = doc.get("port")
        config = doc.get("config")
        socket = doc.get("remoteSocket", "")
        if port is not None and not (isinstance(port, int) and 1 <= port <= 65535):
            raise SshConfigError(f"ssh port {port!r}")
        if config is not None and not (isinstance(config, str) and os.path.isabs(config)):
            raise SshConfigError(f"ssh config {config!r}: not an absolute path")
        if not isinstance(socket, str) or (socket and not socket.startswith("/")):
            raise SshConfigError(f"remote socket {socket!r}: not an absolute path")
        return cls(
            destination=check_destination(str(doc.get("destination", ""))),
            port=port,
            config=config,
            orca=check_remote_orca(str(doc.get("orca", DEFAULT_REMOTE_ORCA))),
            remote_socket=socket,
        )


def check_destination(destination: str) -> str:
    user, _, host = destination.rpartition("@")
    if (user and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", user)) or not _ALIAS.fullmatch(host):
        raise SshConfigError(f"ssh destination {destination!r}: expected [user@]host or a Host alias")
    return destination


def check_remote_orca(command: str) -> str:
    if not command or command.startswith("-") or any(c in command for c in "\n\r\0"):
        raise SshConfigError(f"remote orca command {command!r}: a path or a command name")
    return command


def parse_target(text: str, *, config: str | None = None, orca: str = DEFAULT_REMOTE_ORCA) -> SshTarget:
    """``ssh://[user@]host[:port]`` or a bare ssh_config ``Host`` alias."""
    if config is not None:
        config = os.path.abspath(config)
        if not os.path.isfile(config):
            raise SshConfigError(f"ssh config {config}: no such file")
    if text.startswith("ssh://"):
        match = _SSH_URL.fullmatch(text)
        if match is None:
            raise SshConfigError(f"{text!r}: expected ssh://[user@]host[:port]")
        port = int(match["port"]) if match["port"] else None
        if port is not None and not 1 <= port <= 65535:
            raise SshConfigError(f"{text!r}: port out of range")
        host = match["host"].strip("[]")
        destination = f"{match['user']}@{host}" if match["user"] else host
        return SshTarget(destination, port, config, check_remote_orca(orca))
    if not _ALIAS.fullmatch(text):
        raise SshConfigError(
            f"{text!r}: expected tcp://ADDRESS:PORT, ssh://[user@]host[:port] or an ssh_config Host alias"
        )
    return SshTarget(text, None, config, check_remote_orca(orca))


def ssh_dir_path(paths: OrcaPaths) -> Path:
    """Where the control and forward sockets live (pure: nothing is created)."""
    natural = paths.runtime_dir / "ssh"
    if len(str(natural)) + 1 + _SOCKET_STEM_LEN + 2 + _SSH_TEMP_SUFFIX > _MAX_SOCKET_PATH:
        from orca.paths import user_tmp_root

        digest = hashlib.sha256(str(natural).encode()).hexdigest()[:16]
        natural = user_tmp_root() / f"ssh-{digest}"
    return natural


def ssh_dir(paths: OrcaPaths) -> Path:
    """``ssh_dir_path``, created 0700 and checked (ours, no unsafe ancestor)."""
    path = ssh_dir_path(paths)
    fsio.verify_ancestors(path)
    return fsio.ensure_private_dir(path)


def _stem(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:_SOCKET_STEM_LEN]


def control_path(paths: OrcaPaths, name: str) -> Path:
    return ssh_dir_path(paths) / f"{_stem(name)}.c"


def forward_path(paths: OrcaPaths, name: str) -> Path:
    return ssh_dir_path(paths) / f"{_stem(name)}.l"


def forward_endpoint(paths: OrcaPaths, name: str) -> str:
    """The ZeroMQ endpoint of a host's forward: where its gateway answers, locally."""
    return f"ipc://{forward_path(paths, name)}"


def check_forward_socket(path: Path) -> None:
    """Refuse a forward socket that is not a socket of ours with mode 0600 or tighter."""
    st = path.lstat()
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise SshConfigError(
            f"{path}: not a private socket of ours (mode {stat.S_IMODE(st.st_mode):o}, uid {st.st_uid})"
        )


def ssh_argv(
    target: SshTarget,
    control: Path,
    *,
    batch: bool,
    master: bool = False,
    alive: tuple[int, int] | None = None,
) -> list[str]:
    """The ``ssh`` command line up to (not including) the destination and command."""
    argv = [SSH_BINARY]
    if target.config:
        argv += ["-F", target.config]
    if target.port:
        argv += ["-p", str(target.port)]
    argv += [
        "-o", f"ControlPath={control}",
        "-o", "ControlMaster=" + ("yes" if master else "auto"),
        "-o", "ControlPersist=no",
        "-o", "StreamLocalBindMask=0177",
        "-o", "StreamLocalBindUnlink=yes",
        "-o", "ExitOnForwardFailure=yes",
        "-o", "ConnectTimeout=10",
        "-o", "LogLevel=ERROR",  # ssh's reasons, whatever the user's config says
        "-T",
    ]  # fmt: skip
    if batch:
        argv += ["-o", "BatchMode=yes"]
    if alive is not None:
        interval, count = alive
        argv += ["-o", f"ServerAliveInterval={interval}", "-o", f"ServerAliveCountMax={count}"]
    return argv


def remote_command(orca: str, *args: str) -> str:
    """A shell command line running ``orca ARGS`` there, or saying ORCA_MISSING."""
    cmd = shlex.quote(orca)
    quoted = " ".join(shlex.quote(a) for a in args)
    return (
        f"PATH={REMOTE_PATH}; command -v {cmd} >/dev/null 2>&1 ||"
        f" {{ echo {ORCA_MISSING}; exit {ORCA_MISSING_EXIT}; }}; {cmd} {quoted}"
    )


def link_command(orca: str) -> str:
    """The gateway's master session: say where the gateway is, then wait for stdin's end."""
    return remote_command(orca, "host", "ssh-info") + " && exec cat >/dev/null"


@dataclass(frozen=True)
class RemoteInfo:
    """What ``orca host ssh-info`` (and ``ssh-accept``) print there, one JSON line."""

    version: str
    protocol: int
    up: bool
    server_key: str
    socket: str

    def to_json(self) -> str:
        doc = {"orca": self.version, "protocol": self.protocol, "up": self.up}
        return json.dumps({**doc, "serverKey": self.server_key, "socket": self.socket})

    @classmethod
    def parse(cls, line: str) -> RemoteInfo:
        try:
            doc = json.loads(line)
            info = cls(
                str(doc["orca"]), int(doc["protocol"]), bool(doc["up"]),
                str(doc["serverKey"]), str(doc["socket"]),
            )  # fmt: skip
        except (ValueError, KeyError, TypeError) as exc:
            raise SshConfigError(f"the remote Orca's answer is not understood: {line[:200]!r}") from exc
        if not info.socket.startswith("/"):
            raise SshConfigError(f"the remote gateway socket {info.socket!r} is not a path")
        return info


def classify(returncode: int | None, stdout: str, stderr: str) -> tuple[str, str]:
    """(what, detail) for a failed ssh run: one of the names above and ssh's own words."""
    last = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "")
    if returncode == ORCA_MISSING_EXIT and ORCA_MISSING in stdout:
        return ORCA_MISSING_THERE, "the orca command was not found there"
    text = stderr
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text or ("Host key for" in text and "has changed" in text):
        return HOST_KEY_CHANGED, "the host key differs from the one in known_hosts"
    if "No ED25519 host key is known" in text or re.search(r"No \S+ host key is known", text):
        return HOST_KEY_UNKNOWN, last
    if "Host key verification failed" in text:
        return HOST_KEY_UNKNOWN, last
    if "Permission denied" in text or "Too many authentication failures" in text:
        return AUTH_FAILED, last
    if "Connection refused" in text:
        return SSH_REFUSED, last
    if any(
        s in text
        for s in ("timed out", "No route to host", "Network is unreachable",
                  "Could not resolve hostname", "Connection reset", "Broken pipe",
                  "Connection closed", "closed by remote host", "Timeout, server")
    ):  # fmt: skip
        return UNREACHABLE, last
    return SSH_FAILED, last or f"exit status {returncode}"


def install_hint(target: SshTarget) -> str:
    return (
        f"Orca is not installed on {target.destination} (no `{target.orca}` there): install it"
        f" there (e.g. `ssh {target.destination} pipx install orca-agentd`), or give its path"
        " with --remote-orca"
    )
