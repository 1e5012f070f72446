"""``orca state export [-o FILE]``: the store's whole PersistedState as pretty JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from orca.cli.output import EXIT_OK, fail, fail_from
from orca.wire.errors import OrcaError


def _export(args: argparse.Namespace) -> int:
    from orca.client.sync import call

    try:
        snapshot: dict[str, Any] = call("store", "state.snapshot", {})
    except OrcaError as exc:
        return fail_from(exc)
    text = json.dumps(snapshot["state"], indent=2, ensure_ascii=False) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return EXIT_OK
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        return fail(f"cannot write {args.output}: {exc.strerror or exc}")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("state", help="the persisted state (export)")
    commands = parser.add_subparsers(dest="state_command", metavar="COMMAND", required=True)
    export = commands.add_parser("export", help="print orca-data.json's content as pretty JSON")
    export.add_argument("-o", "--output", help="write to FILE instead of stdout")
    export.set_defaults(func=_export)
