"""``orca host``: remote execution hosts (keys, authorization, known hosts, link status).

On the machine that runs agents (the serving host)::

    orca host key --server                 # its public key, for clients to pin
    orca host authorize KEY [--read-only]  # let a client key in (full by default)
    orca host revoke KEY|NAME

On the machine you sit at (the client)::

    orca host key                          # this client's public key (made on first use)
    orca host add NAME ssh://USER@HOST[:PORT]|ALIAS [--read-only]   # all over ssh
    orca host add NAME tcp://ADDR:PORT --server-key=KEY
    orca host ls | rm NAME | status NAME

See docs/remote.md. Import-light: every import is inside the command.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from typing import TYPE_CHECKING, Any

from orca.cli.output import EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail, print_json, print_table

if TYPE_CHECKING:
    from orca.contracts.gateway import Access, HostLink
    from orca.paths import OrcaPaths


def _paths() -> OrcaPaths:
    from orca.paths import resolve_paths

    return resolve_paths().ensure()


def _key(args: argparse.Namespace) -> int:
    if args.server:
        from orca import keys

        print(keys.host_keys(_paths()).public.decode())
    else:
        from orca.remote.hosts import client_keys

        print(client_keys(_paths()).public.decode())
    return EXIT_OK


def _authorize(args: argparse.Namespace) -> int:
    from orca import keys
    from orca.remote import access

    key = args.key.strip().encode("ascii", "replace")
    if not keys.is_z85_key(key):
        return fail(
            "not a client key: expected the 40 characters `orca host key` prints", EXIT_USAGE
        )
    name = args.name or "client-" + hashlib.sha256(key).hexdigest()[:10]
    try:
        access.check_name(name)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    level: Access = "read-only" if args.read_only else "full"
    path = access.authorize(_paths(), key, name, level)
    print(f"authorized {name} ({level}): {path}")
    return EXIT_OK


def _revoke(args: argparse.Namespace) -> int:
    from orca.remote import access

    removed = access.revoke(_paths(), args.key.strip())
    if not removed:
        return fail(f"no authorized client {args.key!r} (see `orca host ls --clients`)", EXIT_USAGE)
    print("revoked " + ", ".join(removed))
    return EXIT_OK


def _add(args: argparse.Namespace) -> int:
    from orca.remote.hosts import HostConfigError, add_host

    if not args.endpoint.startswith("tcp://"):
        from orca.cli.remote.ssh import add_over_ssh

        return add_over_ssh(_paths(), args)
    if args.server_key is None:
        return fail("a tcp:// host needs --server-key (`orca host key --server` there)", EXIT_USAGE)
    if args.read_only:
        return fail("--read-only is decided on the host: `orca host authorize --read-only` there", EXIT_USAGE)
    try:
        host = add_host(_paths(), args.name, args.endpoint, args.server_key)
    except HostConfigError as exc:
        return fail(str(exc), EXIT_USAGE)
    from orca.client.sync import wake
    from orca.remote.hosts import client_keys

    wake("gateway", _paths())  # dormant with no host to follow: it follows this one now
    print(f"added {host.name} ({host.endpoint}, host id {host.host_id})")
    print(
        "authorize this client there with:  orca host authorize '"
        + client_keys(_paths()).public.decode()
        + "'"
    )
    return EXIT_OK


def _ssh_info(args: argparse.Namespace) -> int:
    from orca.cli.remote.ssh import ssh_info

    return ssh_info(args)


def _ssh_accept(args: argparse.Namespace) -> int:
    from orca.cli.remote.ssh import ssh_accept

    return ssh_accept(args)


def _rm(args: argparse.Namespace) -> int:
    from orca.remote.hosts import load_hosts, remove_host

    paths = _paths()
    known = load_hosts(paths).get(args.name)
    if not remove_host(paths, args.name):
        return fail(f"no remote host {args.name!r} (see `orca host ls`)", EXIT_USAGE)
    if known is not None and known.ssh is not None:
        from orca.cli.remote.ssh import forget_target

        forget_target(paths, args.name)
    print(f"removed {args.name}")
    return EXIT_OK


def _links() -> dict[str, HostLink]:
    from orca.remote.client import local_mirrors

    return {m.link.name: m.link for m in local_mirrors() or []}


def _ls(args: argparse.Namespace) -> int:
    from orca.remote.hosts import load_hosts

    paths = _paths()
    if args.clients:
        from orca.remote.access import load_clients

        clients = sorted(load_clients(paths).values(), key=lambda c: c.name)
        if args.json:
            print_json(
                "clients",
                [
                    {"handle": c.name, "name": c.name, "key": c.public.decode(), "access": c.access}
                    for c in clients
                ],
            )
        else:
            print_table(
                ("NAME", "ACCESS", "KEY"), [(c.name, c.access, c.public.decode()) for c in clients]
            )
        return EXIT_OK
    from orca.remote.client import link_text

    links = _links()
    hosts = sorted(load_hosts(paths).values(), key=lambda h: h.name)
    rows = []
    for host in hosts:
        link = links.get(host.name)
        state = link_text(link) if link is not None else "not followed (gateway not running)"
        error = link.error if link is not None and not link.reachable else ""
        rows.append({"handle": host.name, "name": host.name, "endpoint": host.endpoint,
                     "address": host.address, "error": error,
                     "hostId": host.host_id,
                     "serverKey": host.server_key.decode(), "link": state})  # fmt: skip
    if args.json:
        print_json("hosts", rows)
    else:
        print_table(("HOST", "ENDPOINT", "HOST ID", "LINK"),
                    [(r["name"], r["address"], r["hostId"],
                      r["link"] + (f" ({r['error']})" if r["error"] else "")) for r in rows])  # fmt: skip
    return EXIT_OK


def _status(args: argparse.Namespace) -> int:
    from orca.contracts import sys as sys_contract
    from orca.remote.client import link_text, remote_invoke
    from orca.remote.hosts import load_hosts
    from orca.wire.errors import OrcaError

    paths = _paths()
    host = load_hosts(paths).get(args.name)
    if host is None:
        return fail(f"no remote host {args.name!r} (see `orca host ls`)", EXIT_USAGE)
    link = _links().get(host.name)
    if link is not None:
        print(f"mirror: {link_text(link)}" + (f" ({link.error})" if link.error and not link.reachable else ""))
    from orca.client.sync import KeyRefused

    if host.ssh is not None:
        from orca.cli.remote.ssh import status_over_ssh

        trouble = status_over_ssh(paths, host)
        if trouble is not None:
            print(f"{host.name} ({host.address}): {trouble}", file=sys.stderr)
            return EXIT_FAILED

    try:
        hello = remote_invoke(host, sys_contract.HELLO, timeout=args.timeout)
    except KeyRefused as exc:
        print(f"{host.name} ({host.address}): refused: {exc.message}", file=sys.stderr)
        return EXIT_FAILED
    except OrcaError as exc:
        print(f"{host.name} ({host.address}): unreachable: {exc.message}", file=sys.stderr)
        return EXIT_FAILED
    print(
        f"{host.name} ({host.address}): reachable, orca {hello.version}, protocol {hello.protocol}"
    )
    return EXIT_OK


# A CURVE public key as Z85 text (rfc.zeromq.org/spec/32): 40 characters of this set.
_Z85_KEY = re.compile(r"[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}")


def protect_keys(args: list[str]) -> list[str]:
    """``args`` with every Z85 key that starts with ``-`` kept from argparse's option
    matching: one given as ``--server-key``'s value joins it (``--server-key=KEY``), a
    bare one moves after ``--``. One key in 85 starts with ``-``; without this the key
    ``orca host key`` printed would fail ``authorize`` or ``add`` as an unknown option."""
    end = args.index("--") if "--" in args else len(args)
    kept: list[str] = []
    keys: list[str] = []
    for arg in args[:end]:
        if arg.startswith("-") and _Z85_KEY.fullmatch(arg):
            if kept and kept[-1] == "--server-key":
                kept[-1] = f"--server-key={arg}"
            else:
                keys.append(arg)
        else:
            kept.append(arg)
    if not keys:
        return kept + args[end:]
    return [*kept, "--", *keys, *args[end + 1 :]]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    host = sub.add_parser("host", help="remote execution hosts (keys, authorization, links)")

    class KeyArgsParser(type(host)):  # type: ignore[misc]  # the CLI's parser class
        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            return super().parse_known_args(protect_keys(list(args or [])), namespace)

    hsub = host.add_subparsers(
        dest="host_command", metavar="SUBCOMMAND", parser_class=KeyArgsParser
    )

    p = hsub.add_parser("key", help="print this client's public key (created on first use)")
    p.add_argument("--server", action="store_true", help="print this host's server key instead")
    p.set_defaults(func=_key)

    p = hsub.add_parser("authorize", help="let a client key use this host's gateway")
    p.add_argument("key", help="the client's public key (`orca host key` on the client)")
    p.add_argument("--read-only", action="store_true", help="only ops that change nothing")
    p.add_argument("--name", help="a name for the key (default: client-<hash>)")
    p.set_defaults(func=_authorize)

    p = hsub.add_parser("revoke", help="remove an authorized client key (by key or name)")
    p.add_argument("key")
    p.set_defaults(func=_revoke)

    p = hsub.add_parser("add", help="follow a remote host (its server key is pinned)")
    p.add_argument("name")
    p.add_argument(
        "endpoint",
        help="ssh://[user@]host[:port] or an ssh_config Host alias (over your ssh),"
        " or tcp://ADDRESS:PORT of its gateway",
    )
    p.add_argument("--server-key", help="tcp:// only: `orca host key --server` there")
    p.add_argument("--read-only", action="store_true", help="ssh: authorize this client read-only there")
    p.add_argument("--ssh-config", help="ssh: an ssh_config file for `ssh -F` (default: yours)")
    p.add_argument("--remote-orca", default="orca", help="ssh: the orca command there (default: orca)")
    p.set_defaults(func=_add)

    # The remote halves of an ssh `host add` and of the gateway's ssh link (not for users).
    p = hsub.add_parser("ssh-info", help=argparse.SUPPRESS)
    p.set_defaults(func=_ssh_info)
    p = hsub.add_parser("ssh-accept", help=argparse.SUPPRESS)
    p.add_argument("key")
    p.add_argument("--name", required=True)
    p.add_argument("--read-only", action="store_true")
    p.set_defaults(func=_ssh_accept)

    p = hsub.add_parser("ls", help="the remote hosts and their links")
    p.add_argument("--clients", action="store_true", help="list the authorized client keys instead")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_ls)

    p = hsub.add_parser("rm", help="stop following a remote host")
    p.add_argument("name")
    p.set_defaults(func=_rm)

    p = hsub.add_parser("status", help="probe a remote host's gateway")
    p.add_argument("name")
    p.add_argument("--timeout", type=float, default=5.0)
    p.set_defaults(func=_status)
