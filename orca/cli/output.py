"""Shared CLI output: the ``--json`` convention, readable tables, error exits.

``--json`` prints one object keyed by the collection (``{"actors": [...]}``) with the
model's field names, each row with its ``handle`` (what a command takes to name it);
without it, a table. Errors go to stderr as ``orca: <message>``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from orca.cli.terminal_text import cut_to_width, display_width, one_line, pad_to_width
from orca.wire.errors import BadRequest, Conflict, NotFound, OrcaError, Unavailable

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_RUNNING = 3


def print_json(collection: str, rows: Any, also: Mapping[str, Any] | None = None) -> None:
    """``{collection: rows}`` (then ``also``'s keys) as indented JSON, ASCII only
    (``\\u`` escapes).

    msgspec encodes and indents in C: 0.5 ms for ``worktree ps --json`` with 300 rows,
    where ``json.dump(indent=2)`` (pure Python whenever ``indent`` is set) takes 10 ms,
    a third of a bare interpreter start (bench/cli.py). The text is ``json.dump``'s
    except for the spelling of a float exponent (``1e16`` for ``1e+16``) and a NaN or
    infinity (``null``, where ``json.dump`` prints a token that is not JSON); what
    msgspec would print differently (non-ASCII text and DEL, which ``json.dump``
    escapes; lone surrogates from non-UTF-8 names) takes the ``json`` path, so the
    output stays ASCII for scripts."""
    import msgspec

    document = {collection: rows, **(also or {})}
    try:
        data = msgspec.json.format(msgspec.json.encode(document, enc_hook=str), indent=2)
    except (TypeError, ValueError, msgspec.EncodeError):  # ValueError: lone surrogates
        data = b""
    if data and data.isascii() and b"\x7f" not in data:
        sys.stdout.write(data.decode("ascii"))
    else:
        import json

        json.dump(document, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def print_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None
) -> None:
    """A plain table: fitted to the terminal's width on a terminal, whole in a pipe."""
    width = terminal_width()
    if title:
        print(title)
    text = format_table(columns, rows, width)
    if text:
        print(text)


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The width to fit tables to: the terminal's (``stream``'s, stdout by default), or
    None off a terminal (a pipe gets every character; cutting there would corrupt what
    a script reads)."""
    stream = stream or sys.stdout
    if not stream.isatty():
        return None
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except OSError:
        return None


def format_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None
) -> str:
    """Left-aligned columns two spaces apart, ``-`` for empty cells, no colour.

    Every cell is one line (a line break shows as ``⏎``) and is padded to the columns a
    terminal draws it in (``orca.cli.terminal_text``: ``日`` takes two, a combining
    mark none), so the columns line up whatever the names are written in. With
    ``width``, the widest columns are cut (ending in ``…``) until a line fits; the first
    column (the handle a person types next) is never cut.
    """
    cells = [list(columns)] + [
        ["-" if v is None else one_line(str(v)) for v in row] for row in rows
    ]
    widths = [max(display_width(line[i]) for line in cells) for i in range(len(columns))]
    if width is not None:
        _fit(widths, width - GAP * (len(columns) - 1))
    lines = []
    for line in cells:
        text = GAP_TEXT.join(
            pad_to_width(cut_to_width(cell, w), w) for cell, w in zip(line, widths, strict=True)
        )
        lines.append(text.rstrip())
    return "\n".join(lines)


GAP = 2
GAP_TEXT = " " * GAP
# A cut column keeps at least this many characters (and the header shows it).
MIN_CUT_WIDTH = 6


def _fit(widths: list[int], room: int) -> None:
    """Shrink the widest cuttable column a terminal column at a time until ``room`` fits."""
    while sum(widths) > room:
        candidates = [i for i in range(1, len(widths)) if widths[i] > MIN_CUT_WIDTH]
        if not candidates:
            return
        widest = max(candidates, key=lambda i: widths[i])
        widths[widest] -= 1


def fail(message: str, code: int = EXIT_FAILED) -> int:
    print(f"orca: {message}", file=sys.stderr)
    return code


def fail_from(exc: OrcaError) -> int:
    """Exit for an error: the service not running → 3; the caller's input (bad, naming
    nothing, contradicting the current state) → 2; anything else → 1.

    ``Unavailable`` means 3 while the service is not running (``service_state``): no
    orcad, or one still starting - it holds its lock but does not answer yet, or its
    tree has not been up yet (after a crash the fd keeper starts one at once, and until
    it is up every command would otherwise fail with ``Connection refused``). With
    the service up, an actor that is restarting or a repository whose folder is gone is
    a failure of this operation (1), and ``orca status`` tells which.
    """
    if isinstance(exc, Unavailable):
        state, detail = service_state()
        if state == STOPPED:
            return fail(NOT_RUNNING if _nothing_listens(exc) else exc.message, EXIT_NOT_RUNNING)
        if state == STARTING:
            return fail(
                f"orca is starting ({detail}): try again once `orca status` shows it up",
                EXIT_NOT_RUNNING,
            )
        return fail(f"{exc.message} (see `orca status`)", EXIT_FAILED)
    if isinstance(exc, BadRequest | NotFound | Conflict):
        return fail(exc.message, EXIT_USAGE)
    return fail(exc.message)


NOT_RUNNING = "orca is not running (start it with `orca up`)"


def _nothing_listens(exc: OrcaError) -> bool:
    """Whether the request failed for want of a listener: the socket file a killed tree
    left refuses the connection, and the transport's words for it ("Connection
    refused") say nothing a person needs once orcad is known not to run."""
    from orca.client.zmtp import NotListening

    return isinstance(exc.__cause__, NotListening)


# What ``service_state`` finds.
STOPPED = "stopped"
STARTING = "starting"
RUNNING = "running"
# How long the probe after a failure waits for orcad's own answer.
STATE_PROBE_TIMEOUT_S = 1.0


def service_state() -> tuple[str, str]:
    """Whether the service runs, and a few words on why not: ``stopped`` (no orcad
    holds this ORCA_HOME's lock); ``starting`` (one holds it but does not answer, or
    some actor has not been up yet since it started); ``running``. Asks orcad
    (``sup.status``), so it is for the path of a request that failed."""
    from orca.client.sync import invoke
    from orca.contracts import supervisor as sup
    from orca.paths import resolve_paths

    try:
        paths = resolve_paths()
        info = sup.read_lock_info(paths.lock_file)
    except OSError:
        return STOPPED, ""
    if info is None:
        return STOPPED, ""
    try:
        status = invoke(sup.STATUS, paths=paths, timeout=STATE_PROBE_TIMEOUT_S)
    except OrcaError:
        return STARTING, f"orcad pid {info.pid} does not answer yet"
    # Never up since this orcad started: not spawned yet (a new orcad first waits for the
    # previous tree's actors to be gone) or spawned and not ready; a restart has an exit.
    first_start = [
        a.name for a in status.actors if a.state in ("stopped", "starting") and a.last_exit is None
    ]
    if first_start and not status.supervisor.stopping:
        return STARTING, f"orcad pid {info.pid}; not up yet: {', '.join(first_start)}"
    return RUNNING, ""


def human_bytes(n: int | None) -> str | None:
    if n is None:
        return None
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return None


def human_duration(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"
