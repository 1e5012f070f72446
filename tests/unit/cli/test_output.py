"""Tables a person reads: handle first, fitted to 80 columns on a terminal, whole in a pipe."""

from __future__ import annotations

from orca.cli.output import format_table

ROWS = [["fix-login:3f2a", "running", 4242, "1.2 KiB", "claude --model " + "x" * 80]]


def test_a_table_fits_the_width_and_never_cuts_the_first_column() -> None:
    """At 80 columns every line fits, the handle is whole and the cut cell ends in …."""
    text = format_table(["TERMINAL", "STATE", "PID", "OUTPUT", "COMMAND"], ROWS, 80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[1].startswith("fix-login:3f2a  running") and lines[1].endswith("…")


def test_without_a_width_nothing_is_cut() -> None:
    """In a pipe (no width) a script reads every character."""
    text = format_table(["TERMINAL", "COMMAND"], [[ROWS[0][0], ROWS[0][4]]])
    assert text.splitlines()[1].endswith("x" * 80)


def test_empty_cells_read_as_dash() -> None:
    assert format_table(["A", "B"], [["x", None]]).splitlines()[1] == "x  -"


def test_columns_line_up_by_the_width_a_terminal_draws() -> None:
    """Wide characters (2 columns) and combining marks (0) pad like any name: every
    STATE cell starts in the same terminal column."""
    rows = [["plain:3f2a", "running"], ["ünïcødé-日本:8d35", "running"]]
    rows.append(["u\u0308ber-cafe\u0301:1b2c", "running"])
    header, plain, wide, combining = format_table(["TERMINAL", "STATE"], rows).splitlines()
    assert header == "TERMINAL           STATE"
    assert plain == "plain:3f2a         running"
    assert wide == "ünïcødé-日本:8d35  running"  # 17 columns in 15 characters
    assert combining == "u\u0308ber-cafe\u0301:1b2c     running"  # 14 columns in 16


def test_a_multi_line_cell_is_one_row_cut_like_any_other() -> None:
    """A command of three lines is one row (⏎ for its breaks), cut at the width."""
    script = "python3 -c 'import time\nprint(1)\ntime.sleep(600)'"
    whole = format_table(["TERMINAL", "COMMAND"], [["fix-auth:8d35", script]])
    assert whole.splitlines()[1] == (
        "fix-auth:8d35  python3 -c 'import time⏎print(1)⏎time.sleep(600)'"
    )
    cut = format_table(["TERMINAL", "COMMAND"], [["fix-auth:8d35", script]], 40)
    assert cut.splitlines()[1] == "fix-auth:8d35  python3 -c 'import time⏎…"  # 40 columns
