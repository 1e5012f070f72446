"""``orca web``: the web dashboard and phone approvals (issue 27; ``actors/web``).

``orca web [--bind HOST[:PORT]] [--open]``: when the tree runs the web actor
(``[enable] web = true``), print its address (``--open``: open it, signed in, in this
machine's browser); else run it in the foreground until Ctrl-C, on web.toml's address or
``--bind``'s. A bind that is not loopback is refused unless web.toml sets a token and TLS
(``orca.web_config``): exit 2, nothing started.

``orca web pair [--name NAME] [--scopes view,type,approve]``: a one-time code for a new
device, shown as a QR code of the link that carries it (scan it with the phone).
``orca web devices [--json]`` lists the paired devices; ``orca web devices revoke ID``
revokes one - through the running web actor, or, when none runs, in the device file
itself (under the same lock), so a lost phone can be revoked at any time.

Kept import-light: nothing is imported before the command is known to be this one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from orca.cli.output import EXIT_FAILED, EXIT_NOT_RUNNING, EXIT_OK, EXIT_USAGE, fail, print_json

if TYPE_CHECKING:
    from orca.web_config import WebConfig

# The foreground dashboard answers within this (it loads the board first).
START_TIMEOUT_S = 15.0
STATUS_TIMEOUT_S = 2.0
# The link `--open` hands the browser is good for this long (it is used at once).
OPEN_PAIRING_TTL_S = 60.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("web", help="the web dashboard: agents, terminals, approvals from a phone")
    p.add_argument("--bind", metavar="HOST[:PORT]", help="where a foreground dashboard listens")
    p.add_argument(
        "--open", action="store_true", help="open it in this machine's browser, signed in"
    )
    p.set_defaults(func=cmd_web)
    web = p.add_subparsers(dest="web_command", metavar="COMMAND")
    pair = web.add_parser("pair", help="a one-time code (QR) to pair a phone or another browser")
    pair.add_argument("--name", default="phone", help="what to call the device (default: phone)")
    pair.add_argument(
        "--scopes",
        default="view,approve",
        help="comma-separated: view, type (keys into terminals), approve (default: view,approve)",
    )
    pair.add_argument("--ttl", type=float, default=300.0, help="seconds the code is good for")
    pair.set_defaults(func=cmd_pair)
    devices = web.add_parser("devices", help="the paired devices (`revoke ID` to revoke one)")
    devices.add_argument("--json", action="store_true", help='print {"devices": [...]}')
    dsub = devices.add_subparsers(dest="devices_command", metavar="COMMAND")
    revoke = dsub.add_parser("revoke", help="revoke a device: its pages stop at once")
    revoke.add_argument("device", help="the device id `orca web devices` shows")
    revoke.set_defaults(func=cmd_revoke)
    devices.set_defaults(func=cmd_devices)


def _status() -> Any | None:
    from orca.client.sync import invoke
    from orca.contracts import web
    from orca.wire.errors import OrcaError

    try:
        return invoke(web.STATUS, timeout=STATUS_TIMEOUT_S)
    except OrcaError:
        return None


def _open_signed_in() -> None:
    import webbrowser

    from orca.client.sync import invoke
    from orca.contracts import web

    pairing = invoke(
        web.PAIR,
        web.PairArgs(
            name="browser on this machine", scopes=list(web.SCOPES), ttl_s=OPEN_PAIRING_TTL_S
        ),
    )
    if not webbrowser.open(pairing.url):
        print(f"open this once (it signs the browser in): {pairing.url}")


def cmd_web(args: argparse.Namespace) -> int:
    from orca.paths import resolve_paths
    from orca.web_config import WebConfigError, load_web_config

    paths = resolve_paths()
    try:
        config = load_web_config(paths.config_dir, bind=args.bind)
    except WebConfigError as exc:
        return fail(str(exc), EXIT_USAGE)
    running = _status()
    if running is not None:
        if args.bind and (config.bind, config.port) != (running.bind, running.port):
            return fail(
                f"the tree's web actor serves {running.url} (web.toml); stop it or change"
                " web.toml to listen elsewhere",
                EXIT_USAGE,
            )
        print(running.url)
        if args.open:
            _open_signed_in()
        return EXIT_OK
    from orca.client.sync import invoke
    from orca.contracts import supervisor as sup
    from orca.wire.errors import OrcaError

    try:
        invoke(sup.STATUS, timeout=STATUS_TIMEOUT_S)
    except OrcaError:
        return fail("the service is not running (start it with `orca up`)", EXIT_NOT_RUNNING)
    return _foreground(args, config)


def _foreground(args: argparse.Namespace, config: WebConfig) -> int:
    import socket

    from orca.web_config import cannot_listen

    # Checked here too, so that a port in use is one line, not the actor's start-up.
    family = socket.AF_INET6 if ":" in config.bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((config.bind, config.port))
        except OSError as exc:
            return fail(cannot_listen(config, exc.strerror or str(exc)), EXIT_FAILED)
    env = {**os.environ, **({"ORCA_WEB_BIND": args.bind} if args.bind else {})}
    # The actor runtime stops an actor whose parent of record dies (orca.actor.app): so
    # this command is that parent, and a killed `orca web` leaves no dashboard behind.
    env["ORCA_SUPERVISOR_PID"] = str(os.getpid())
    env.pop("ORCA_SUPERVISOR", None)
    child = subprocess.Popen([sys.executable, "-m", "actors.web"], env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        status = None
        while status is None and child.poll() is None and time.monotonic() < deadline:
            status = _status()
            if status is None:
                time.sleep(0.1)
        if status is None:
            if child.poll() is None:
                child.terminate()
            child.wait()
            return fail("the web dashboard did not start (see the line above)", EXIT_FAILED)
        print(f"web dashboard: {status.url}  (Ctrl-C stops it; `orca web pair` pairs a phone)")
        sys.stdout.flush()
        if args.open:
            _open_signed_in()
        return EXIT_OK if child.wait() == 0 else EXIT_FAILED
    except KeyboardInterrupt:
        child.wait()  # it got the same Ctrl-C (one process group): it stops itself
        return EXIT_OK


def cmd_pair(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import web
    from orca.wire.errors import BadRequest, OrcaError

    scopes = [s.strip() for s in args.scopes.split(",") if s.strip()]
    unknown = [s for s in scopes if s not in web.SCOPES]
    if unknown or not scopes:
        return fail(f"--scopes: choose from {', '.join(web.SCOPES)}", EXIT_USAGE)
    try:
        pairing = invoke(web.PAIR, web.PairArgs(name=args.name, scopes=scopes, ttl_s=args.ttl))
    except BadRequest as exc:
        return fail(exc.message, EXIT_USAGE)
    except OrcaError:
        return fail("the web dashboard is not running (`orca web`)", EXIT_NOT_RUNNING)
    import segno

    qr = segno.make(pairing.url, error="m")
    qr.terminal(compact=True, border=2)
    minutes = max(1, round((pairing.expires_at_ms / 1000 - time.time()) / 60))
    print(f"scan it, or open: {pairing.url}")
    print(f"one use, within {minutes} min; this device may: {', '.join(pairing.scopes)}")
    return EXIT_OK


def cmd_devices(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import web
    from orca.wire.errors import OrcaError

    try:
        devices = [d for d in invoke(web.DEVICES, timeout=STATUS_TIMEOUT_S).devices]
    except OrcaError:
        devices = None
    if devices is None:
        from orca.paths import resolve_paths
        from orca.web_devices import DevicesFile, DevicesFileError

        try:
            devices = [d.to_wire() for d in DevicesFile(resolve_paths().data_dir).load()]
        except DevicesFileError as exc:
            return fail(str(exc))
    if args.json:
        import msgspec

        print_json("devices", msgspec.to_builtins(devices))
        return EXIT_OK
    if not devices:
        print("no paired devices (`orca web pair` pairs one)")
        return EXIT_OK
    from orca.cli.output import print_table

    rows = [
        [d.device_id, d.name, ",".join(d.scopes), _when(d.created_at_ms), _when(d.last_seen_ms)]
        for d in devices
    ]
    print_table(["ID", "NAME", "SCOPES", "PAIRED", "LAST SEEN"], rows)
    return EXIT_OK


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def cmd_revoke(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import web
    from orca.wire.errors import NotFound, OrcaError

    try:
        invoke(web.REVOKE, web.RevokeArgs(device_id=args.device), timeout=STATUS_TIMEOUT_S)
    except NotFound as exc:
        return fail(exc.message, EXIT_USAGE)
    except OrcaError:
        return _revoke_offline(args.device)
    print(f"revoked {args.device}")
    return EXIT_OK


def _revoke_offline(device_id: str) -> int:
    """No web actor answers: edit the device file under its lock (held by a web actor
    that runs but does not answer: refused)."""
    from orca.paths import resolve_paths
    from orca.web_devices import DevicesFile, DevicesFileError

    file = DevicesFile(resolve_paths().data_dir)
    if not file.try_acquire():
        return fail("a web actor holds the device list but does not answer; try again")
    try:
        devices = file.load()
        kept = [d for d in devices if d.device_id != device_id]
        if len(kept) == len(devices):
            return fail(f"no device {device_id!r}", EXIT_USAGE)
        file.save(kept)
    except (DevicesFileError, OSError) as exc:
        return fail(str(exc))
    finally:
        file.release()
    print(f"revoked {device_id}")
    return EXIT_OK
