"""``orca host add NAME ssh://…`` and its remote half, over the user's own ssh.

On the client, ``add_over_ssh`` runs ONE remote command through ``ssh`` (on the host's
control socket: over the gateway's master when it is up, else a connection that ends
with the command; ``orca.remote.ssh``)::

    orca host ssh-accept --name CLIENT [--read-only] -- CLIENT_KEY

which, on the remote host, starts its tree if it is down (``orca up``), authorizes the
client key (what ``orca host authorize`` does) and prints the remote state in one JSON
line: version, protocol, the server key (pinned here) and the gateway's Unix socket
(the forward's far end). Then the host is recorded and, if the local gateway runs, the
command waits (bounded) for its mirror to be live, so one command ends at a working
mirror. Every failure is one line: ssh refused, auth failed, host key changed or
unknown, unreachable, Orca missing there (with how to install it), remote tree down.

``ssh_info`` (``orca host ssh-info``) prints the same line without changing anything:
the gateway's ssh master runs it first, ``orca host status`` too.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from orca.cli.output import EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail

if TYPE_CHECKING:
    from orca.paths import OrcaPaths
    from orca.remote.hosts import RemoteHost
    from orca.remote.ssh import RemoteInfo, SshTarget

# `orca up` there may start every actor: bounded generously, never forever.
ADD_TIMEOUT_S = 120.0
STATUS_TIMEOUT_S = 30.0
# How long `host add` waits for the new mirror to be live before saying it is not yet.
MIRROR_WAIT_S = 30.0


def _local_socket(paths: OrcaPaths) -> str:
    from orca.contracts import gateway as gw

    return paths.ipc_endpoint(gw.CONTRACT.actor, gw.LOCAL_SOCKET_KIND)[len("ipc://") :]


def _gateway_up(paths: OrcaPaths) -> bool:
    from orca.client.sync import invoke
    from orca.contracts import sys as sys_contract
    from orca.wire.errors import OrcaError

    try:  # a gateway left dormant (nothing to serve at `orca up`) is started by this
        invoke(sys_contract.PING, endpoint=paths.ipc_endpoint("gateway", "rpc"), timeout=3.0)
    except OrcaError:
        return False
    return os.path.exists(_local_socket(paths))


def remote_info(paths: OrcaPaths) -> RemoteInfo:
    from orca import PROTOCOL_VERSION, __version__, keys
    from orca.remote.ssh import RemoteInfo

    return RemoteInfo(
        version=__version__,
        protocol=PROTOCOL_VERSION,
        up=_gateway_up(paths),
        server_key=keys.host_keys(paths).public.decode(),
        socket=_local_socket(paths),
    )


def ssh_info(args: argparse.Namespace) -> int:
    from orca.paths import resolve_paths

    print(remote_info(resolve_paths().ensure()).to_json(), flush=True)
    return EXIT_OK


def ssh_accept(args: argparse.Namespace) -> int:
    """The remote half of ``host add``: up, authorize, say where the gateway is."""
    from orca import keys
    from orca.paths import resolve_paths
    from orca.remote import access

    paths = resolve_paths().ensure()
    key = args.key.strip().encode("ascii", "replace")
    if not keys.is_z85_key(key):
        return fail("not a client key: expected the 40 characters `orca host key` prints", EXIT_USAGE)
    try:
        access.check_name(args.name)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    if not _gateway_up(paths):
        from orca.cli.service import cmd_up

        with contextlib.redirect_stdout(sys.stderr):  # stdout carries only the answer
            code = cmd_up(argparse.Namespace(foreground=False))
        if code != EXIT_OK or not _gateway_up(paths):
            return fail("could not start Orca here (`orca up` failed; `orca logs` says why)")
    access.authorize(paths, key, args.name, "read-only" if args.read_only else "full")
    print(remote_info(paths).to_json(), flush=True)
    return EXIT_OK


def client_name(public: bytes) -> str:
    """How the remote host names this client's key: ``<hostname>-<key hash>``."""
    host = "".join(c if c.isalnum() or c in "_.-" else "-" for c in socket.gethostname())
    host = host.lstrip("_.-")[:40] or "client"
    return f"{host}-{hashlib.sha256(public).hexdigest()[:8]}"


def _hint(what: str, target: SshTarget) -> str:
    from orca.remote import ssh

    dest = target.destination
    return {
        ssh.HOST_KEY_CHANGED: f"if {dest} was reinstalled, check its new key and remove the old"
        " one (`ssh-keygen -R HOST`); otherwise someone may be in the middle",
        ssh.HOST_KEY_UNKNOWN: f"run `ssh {dest}` once to check and accept its host key",
        ssh.AUTH_FAILED: f"`ssh {dest}` must log in without a password prompt: put your key"
        " there (ssh-copy-id) or in your agent",
        ssh.SSH_REFUSED: f"nothing accepts ssh connections at {dest} (sshd down? wrong port?)",
        ssh.UNREACHABLE: f"check the network path to {dest}",
        ssh.ORCA_MISSING_THERE: ssh.install_hint(target),
    }.get(what, "")


def run_remote(paths: OrcaPaths, name: str, target: SshTarget, *args: str, timeout: float) -> RemoteInfo:
    """``orca ARGS`` on ``target`` over ssh; its JSON line, or ``SshFailed``."""
    from orca.remote import ssh

    ssh.ssh_dir(paths)
    argv = [
        *ssh.ssh_argv(target, ssh.control_path(paths, name), batch=not sys.stdin.isatty()),
        target.destination,
        ssh.remote_command(target.orca, *args),
    ]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
        )
    except FileNotFoundError:
        raise SshFailed("ssh missing", "no `ssh` here: install OpenSSH's client") from None
    except subprocess.TimeoutExpired:
        raise SshFailed(ssh.UNREACHABLE, f"no answer in {timeout:g}s") from None
    if done.returncode != 0:
        if done.returncode == 255 or ssh.ORCA_MISSING in done.stdout:
            raise SshFailed(*ssh.classify(done.returncode, done.stdout, done.stderr))
        last = next((ln for ln in reversed(done.stderr.splitlines()) if ln.strip()), "")
        raise SshFailed("remote orca failed", last.removeprefix("orca: ") or f"exit {done.returncode}")
    lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
    try:
        return ssh.RemoteInfo.parse(lines[-1] if lines else "")
    except ssh.SshConfigError as exc:
        raise SshFailed("remote orca", str(exc)) from None


class SshFailed(Exception):
    def __init__(self, what: str, detail: str) -> None:
        super().__init__(f"{what}: {detail}")
        self.what, self.detail = what, detail


def add_over_ssh(paths: OrcaPaths, args: argparse.Namespace) -> int:
    from orca.remote.hosts import HostConfigError, add_ssh_host, check_host_name, client_keys
    from orca.remote.ssh import SshConfigError, parse_target

    try:
        check_host_name(args.name)
        target = parse_target(args.endpoint, config=args.ssh_config, orca=args.remote_orca)
    except (HostConfigError, SshConfigError) as exc:
        return fail(str(exc), EXIT_USAGE)
    if args.server_key:
        return fail("--server-key is for tcp:// hosts: over ssh the key is fetched and pinned", EXIT_USAGE)
    public = client_keys(paths).public
    accept = ["host", "ssh-accept", "--name", client_name(public)]
    if args.read_only:
        accept.append("--read-only")
    try:
        info = run_remote(paths, args.name, target, *accept, "--", public.decode(), timeout=ADD_TIMEOUT_S)
    except SshFailed as exc:
        hint = _hint(exc.what, target)
        return fail(f"{args.name} ({target.target_id}): {exc.what}: {exc.detail}" + (f" ({hint})" if hint else ""))
    from dataclasses import replace

    host = add_ssh_host(paths, args.name, replace(target, remote_socket=info.socket), info.server_key)
    level = "read-only" if args.read_only else "full"
    _record_target(paths, host)
    print(
        f"added {host.name} (ssh {target.target_id}, host id {host.host_id}): orca {info.version}"
        f" there, this client authorized ({level}), its server key pinned"
    )
    return _await_mirror(paths, host)


def _record_target(paths: OrcaPaths, host: RemoteHost) -> None:
    """The host as one of the state's SSH targets (seed 02 §2; the store owns them):
    ``id`` = ``label`` = its name, so its rows' host id ``ssh:<name>`` names it."""
    from orca.client.sync import invoke
    from orca.contracts import store
    from orca.wire.errors import OrcaError

    target = host.target_record()
    assert target is not None
    try:
        invoke(store.SSH_TARGET_UPSERT, store.SshTargetArgs(ssh_target=target), paths=paths)
    except OrcaError as exc:
        print(
            f"note: not recorded among the state's SSH targets yet ({exc.message});"
            " the gateway records it once the store answers",
            file=sys.stderr,
        )


def forget_target(paths: OrcaPaths, name: str) -> None:
    """``orca host rm``: drop the SSH target of that name from the state, if it is there."""
    from orca.client.sync import invoke
    from orca.contracts import store
    from orca.wire.errors import OrcaError

    try:
        invoke(store.SSH_TARGET_REMOVE, store.IdArgs(id=name), paths=paths)
    except OrcaError:
        pass  # none recorded (a tcp host, or added while the store was down)


def _await_mirror(paths: OrcaPaths, host: RemoteHost) -> int:
    """Wait (bounded) for the local gateway's mirror of ``host`` to be live."""
    from orca.client.sync import Subscription, endpoint_for
    from orca.contracts import gateway as gw
    from orca.remote.client import link_text, local_mirrors

    if local_mirrors(paths) is None:
        print("the local gateway is not running: `orca up` here to follow it")
        return EXIT_OK
    deadline = time.monotonic() + MIRROR_WAIT_S
    with Subscription(endpoint_for(gw.CONTRACT.actor, paths, "pub"), [gw.MIRROR_CHANGED], consumer="host add") as sub:
        sub.wait_live(2.0)
        while True:
            link = next((m.link for m in local_mirrors(paths) or [] if m.link.name == host.name), None)
            if link is not None and link.reachable:
                print(f"{host.name}: mirror live")
                return EXIT_OK
            if time.monotonic() > deadline:
                state = link_text(link) if link is not None else "not followed yet"
                print(f"{host.name}: mirror {state} ({link.error if link else ''}); see `orca host status {host.name}`")
                return EXIT_FAILED
            sub.receive(deadline - time.monotonic())


def status_over_ssh(paths: OrcaPaths, host: RemoteHost) -> str | None:
    """What ssh says about ``host`` now: None if it answers and its tree is up, else
    ``what: detail`` (``orca host status``)."""
    assert host.ssh is not None
    try:
        info = run_remote(paths, host.name, host.ssh, "host", "ssh-info", timeout=STATUS_TIMEOUT_S)
    except SshFailed as exc:
        hint = _hint(exc.what, host.ssh)
        return f"{exc.what}: {exc.detail}" + (f" ({hint})" if hint else "")
    from orca.remote.ssh import REMOTE_TREE_DOWN

    if not info.up:
        return f"{REMOTE_TREE_DOWN}: Orca is not running there (`orca up` there, or `orca host add` again)"
    if info.server_key != host.server_key.decode():
        return "server key changed: its Orca key is not the pinned one (`orca host add` again if expected)"
    return None
