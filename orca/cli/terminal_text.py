"""Text as a terminal draws it: on one line, how many columns wide, cut to fit.

A table cell is padded to the columns a terminal draws, not to its characters: an
East Asian wide character (``日``) takes two columns, a combining mark (the ``̈`` of a
decomposed ``ü``) and other zero-width characters none. Padding by ``len`` shifted
every later column of such a row. A cell is also one line: a command typed over
several lines (``python3 -c '...'``) shows its line breaks as ``⏎``, and any other
control character as its escape (``\\t``, ``\\x1b``), so no cell moves the cursor.

Widths are ``rich.cells``' (a dependency already, and what ``orca ui`` draws with: one
answer for both; it knows emoji sequences and skin tones too). Loading its tables costs
~2 ms, and rich is one of the modules a listing keeps out of its start-up
(tests/unit/client/test_cli_imports.py): ASCII text, nearly every cell, is one column a
character and measured with ``len``; only a table with other text imports rich.
"""

from __future__ import annotations

LINE_BREAK_MARK = "⏎"  # East Asian Width "N": one column on every terminal
CUT_MARK = "…"

# C0, DEL and C1: the characters that move the cursor or start an escape sequence.
_CONTROL_CODES = (*range(0x20), *range(0x7F, 0xA0))
# Each as its escape, but the line breaks (a ``\r\n`` made one ``\n`` first) as ⏎.
_ONE_LINE_TABLE = {code: repr(chr(code))[1:-1] for code in _CONTROL_CODES}
_ONE_LINE_TABLE |= {ord("\n"): LINE_BREAK_MARK, ord("\r"): LINE_BREAK_MARK}


def one_line(text: str) -> str:
    """``text`` on one line: each line break (``\\r\\n``, ``\\n`` or ``\\r``) shown as
    ``⏎``, any other control character as its escape."""
    if text.isprintable():
        return text
    return text.replace("\r\n", "\n").translate(_ONE_LINE_TABLE)


def display_width(text: str) -> int:
    """The columns a terminal draws ``text`` in (one line of printable text)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def cut_to_width(text: str, width: int) -> str:
    """``text`` if it fits in ``width`` columns, else its start and ``…`` within them
    (a space before the ``…`` where a wide character would straddle the edge)."""
    if display_width(text) <= width:
        return text
    room = width - display_width(CUT_MARK)
    if text.isascii():
        return text[:room] + CUT_MARK
    from rich.cells import set_cell_size

    return set_cell_size(text, room) + CUT_MARK


def pad_to_width(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` columns (as ``str.ljust`` by columns)."""
    return text + " " * (width - display_width(text))
