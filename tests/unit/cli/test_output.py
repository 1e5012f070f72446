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
