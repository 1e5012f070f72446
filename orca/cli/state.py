"""``orca state export [-o FILE]`` and ``orca state status [--json]``.

``export`` prints the store's whole PersistedState as pretty JSON. ``status`` shows how
the last load went (primary, or recovered from a backup with the corrupt file kept
aside) and how saving goes (writes, skipped unchanged writes, the last error such as a
full disk). :func:`store_warnings` turns the store's ``sys.stats`` into the lines a
person must see; ``orca status`` can print them under its table.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from orca.cli.output import EXIT_OK, fail, print_json, print_table

if TYPE_CHECKING:
    import argparse

    from orca.client.sync import Pending


def _export(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import store

    snapshot = invoke(store.STATE_SNAPSHOT)
    import json

    text = json.dumps(snapshot.state, indent=2, ensure_ascii=False) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return EXIT_OK
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        return fail(f"cannot write {args.output}: {exc.strerror or exc}")
    return EXIT_OK


def store_warnings(stats: dict[str, Any]) -> list[str]:
    """Problems worth a person's attention in the store's ``sys.stats`` reply."""
    store = stats.get("store") or {}
    load = store.get("load") or {}
    save = store.get("save") or {}
    lines: list[str] = []
    if load.get("source") == "backup":
        lines.append(
            f"orca-data.json was unreadable; loaded {load.get('loadedFrom')} instead"
            f" (the bad file is kept as {load.get('corruptKeptAs')})"
        )
    elif load.get("source") == "no_valid_copy":
        lines.append(
            "orca-data.json and every backup were unreadable; started from defaults"
            f" (the bad file is kept as {load.get('corruptKeptAs')})"
        )
    lines.extend(f"state: {problem}" for problem in load.get("stateProblems") or ())
    error = save.get("lastError")
    if error:
        lines.append(
            f"saving orca-data.json fails ({error.get('errno')}: {error.get('message')});"
            " the last good file is kept and the save is retried"
        )
    return lines


def hooks_warnings(stats: dict[str, Any]) -> list[str]:
    """Problems worth a person's attention in the hooks actor's ``sys.stats`` reply."""
    hooks = stats.get("hooks") or {}
    status_file = hooks.get("statusFile") or {}
    endpoint_file = hooks.get("endpointFile") or {}
    load = status_file.get("load") or {}
    http = hooks.get("http") or {}
    lines: list[str] = []
    if status_file.get("degraded"):
        lines.append(
            f"saving last-status.json fails ({status_file.get('lastError')});"
            " agent status is kept in memory and the save is retried"
        )
    if endpoint_file.get("degraded"):
        lines.append(
            f"writing endpoint.env fails ({endpoint_file.get('lastError')});"
            " agents' hooks cannot reach Orca until it is written"
        )
    if load.get("keptAside"):
        lines.append(
            f"last-status.json was damaged ({load.get('damage')}); kept as {load.get('keptAside')}"
        )
    rows = hooks.get("rows") or {}
    if rows.get("evicted"):
        lines.append(
            f"{rows['evicted']} agent-status rows were evicted (oldest first) to stay within"
            f" {rows.get('maxPerWorktree')} per worktree and {rows.get('max')} in all"
        )
    if http.get("evicted"):
        lines.append(
            f"the hook endpoint dropped {http['evicted']} idle unauthenticated connections"
            f" (cap {http.get('maxConnections')})"
        )
    return lines


def ptyd_warnings(stats: dict[str, Any]) -> list[str]:
    """Problems worth a person's attention in ptyd's ``sys.stats`` reply."""
    history = (stats.get("ptyd") or {}).get("history") or {}
    if not history.get("degraded"):
        return []
    return [
        f"terminal history is not being saved for {history['degraded']} session(s)"
        f" ({history.get('lastError')}; {history.get('droppedBytes', 0)} bytes only in memory);"
        " terminals keep running and saving resumes when there is space"
    ]


STORE_ACTOR = "store"
_SOURCE_WORDS = {"missing": "nothing yet (first start)", "no_valid_copy": "defaults"}


def store_stats(timeout: float = 5.0) -> dict[str, Any]:
    """The store's ``sys.stats`` (an open map: the runtime's keys plus ``store``)."""
    return begin_store_stats(timeout).result()


def begin_store_stats(timeout: float = 5.0) -> Pending[dict[str, Any]]:
    """:func:`store_stats`, asked now and read with ``.result()``."""
    from orca.client.sync import begin, endpoint_for
    from orca.contracts import sys as builtin_ops

    # The actor's name, not ``store.CONTRACT.actor``: importing the store contract
    # (~4 ms) for its name alone would cost every `orca status` (bench/cli.py);
    # tests/unit/client/test_cli_imports.py checks the two agree.
    endpoint = endpoint_for(STORE_ACTOR)
    return begin(builtin_ops.STATS, endpoint=endpoint, timeout=timeout)


def _status(args: argparse.Namespace) -> int:
    stats = store_stats()
    store = stats.get("store") or {}
    if args.json:
        print_json("store", [store])
        return EXIT_OK
    load, save = store.get("load") or {}, store.get("save") or {}
    duration = save.get("lastWriteDurationS")
    rows = [
        ("file", store.get("file")),
        ("loaded from", load.get("loadedFrom") or _SOURCE_WORDS.get(str(load.get("source")), "-")),
        ("writes", save.get("writes")),
        ("unchanged, skipped", save.get("skippedUnchanged")),
        ("failed saves", save.get("failures")),
        ("last save", None if duration is None else f"{duration * 1000:.1f} ms"),
    ]
    print_table(("", "STORE"), rows)
    for line in store_warnings(stats):
        print(f"warning: {line}")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("state", help="the persisted state (export)")
    commands = parser.add_subparsers(dest="state_command", metavar="COMMAND", required=True)
    export = commands.add_parser("export", help="print orca-data.json's content as pretty JSON")
    export.add_argument("-o", "--output", help="write to FILE instead of stdout")
    export.set_defaults(func=_export)
    status = commands.add_parser("status", help="how orca-data.json was loaded and is saved")
    status.add_argument("--json", action="store_true", help='print {"store": [...]}')
    status.set_defaults(func=_status)
