"""The terminal model: a snapshot redraws exactly the screen a watching client has."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.ptyd.sessions import rebuild_model
from actors.ptyd.terminal_model import TerminalModel
from orca.model.vt import RESTORE_USER_TERMINAL, QueryFilter

COLS, ROWS = 60, 12
LOG = b"".join(b"\x1b[3%dm[%05d]\x1b[0m build step %d ok\r\n" % (i % 8, i, i) for i in range(400))
# Scripted equivalents of the programs users run in agents' terminals.
VIM = (
    b"\x1b]0;vim notes.txt\x07\x1b[?1049h\x1b[?1h\x1b=\x1b[?2004h\x1b[?25l\x1b[H\x1b[2J"
    + b"".join(b"\x1b[%d;1H\x1b[34m~\x1b[0m" % r for r in range(2, ROWS))
    + b"\x1b[1;1Hhello \x1b[1;33mworld\x1b[0m\x1b[%d;1H\x1b[7m-- INSERT --\x1b[0m" % ROWS
    + b"\x1b[6n\x1b[c\x1b]11;?\x07\x1b[1;7H\x1b[?25h"
)
VIM_EXIT = b"\x1b[?25l\x1b[?2004l\x1b[?1l\x1b>\x1b[?1049l\x1b]0;sh\x07$ "
LESS = (
    b"\x1b[?1049h\x1b[?1h\x1b=\r"
    + b"".join(b"line %d of the file\r\n" % i for i in range(ROWS - 1))
    + b"\x1b[7m(END)\x1b[27m\x1b[K"
)
LESS_EXIT = b"\r\x1b[K\x1b[?1l\x1b>\x1b[?1049l"
TOP = b"\x1b[?1049h\x1b[?25l" + b"".join(
    b"\x1b[H\x1b[1mtop - %02d:00 up\x1b[0m\x1b[K\r\n\x1b[44;37m  PID USER   %%CPU \x1b[0m\x1b[K\r\n"
    % t
    + b"".join(
        b"\x1b[38;2;%d;200;80m%5d root %4.1f\x1b[0m\x1b[K\r\n" % (t * 9, p, p / 7) for p in range(8)
    )
    for t in range(6)
)
MOUSE_TUI = b"\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[2J\x1b[5;10H\x1b[48;5;196m  \x1b[0m\x1b[?1004h"
SESSION = (
    LOG
    + VIM
    + b"ihello"
    + VIM_EXIT
    + LESS
    + LESS_EXIT
    + TOP
    + b"\x1b[?1049l"
    + MOUSE_TUI
    + LOG[:3000]
)


def model_of(*parts: bytes) -> TerminalModel:
    model = TerminalModel(COLS, ROWS)
    for part in parts:
        model.feed(part)
    return model


@pytest.mark.parametrize(
    "cut",
    [
        0,
        len(LOG),
        len(LOG) + len(VIM) // 2,
        len(LOG) + len(VIM),
        len(LOG) + len(VIM) + 20,
        len(SESSION) // 2,
        len(SESSION) - 2000,
        len(SESSION),
    ],
)
def test_reattach_at_any_point_shows_the_watchers_screen(cut: int) -> None:
    """Detach at ``cut``, reattach (snapshot), watch the rest: the screen (cells,
    attributes, cursor, modes, title) equals that of a client that watched it all."""
    watcher = model_of(SESSION)
    detached = model_of(SESSION[:cut])
    client = model_of(b"old junk \x1b[?1049h\x1b[31m on the user's screen", detached.snapshot())
    assert client.screen_state() == detached.screen_state()
    client.feed(SESSION[cut:])
    assert client.screen_state() == watcher.screen_state()


def test_snapshot_of_an_alternate_screen_keeps_the_primary_beneath() -> None:
    """Reattached inside vim, the shell screen is back when vim exits."""
    inside = model_of(LOG, VIM)
    client = model_of(inside.snapshot())
    assert client.modes.alt_screen and client.modes.bracketed_paste and client.modes.keypad
    client.feed(VIM_EXIT)
    assert client.screen_state() == model_of(LOG, VIM, VIM_EXIT).screen_state()


def test_snapshot_contains_no_query_even_when_the_history_does() -> None:
    """The snapshot is generated from state: the queries in the output are not in it."""
    model = model_of(SESSION)
    snapshot = model.snapshot()
    assert QueryFilter().feed(snapshot) == snapshot
    assert b"\x1b[6n" not in snapshot and b"\x1b[c" not in snapshot and b"11;?" not in snapshot


def test_model_answers_dsr_da_and_colour_queries() -> None:
    """Queries fed to the model produce the answers a terminal would type."""
    model = model_of(b"ab\x1b[6n\x1b[c\x1b]10;?\x07\x1b]11;?\x1b\\")
    replies = model.take_replies()
    assert replies[0] == b"\x1b[1;3R" and replies[1].startswith(b"\x1b[?")
    assert replies[2].startswith(b"\x1b]10;rgb:") and replies[3].startswith(b"\x1b]11;rgb:")
    assert model.take_replies() == []


def test_checkpoint_plus_tail_equals_the_live_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """After a crash: checkpoint (with its offset) + journal tail = the model that ran on."""
    from actors.ptyd.history import save_checkpoint
    from actors.ptyd.info import SessionInfo

    half = len(LOG) + len(VIM)
    checkpoint = model_of(SESSION[:half]).checkpoint()
    assert checkpoint is not None
    path = tmp_path / "x.model"
    save_checkpoint(path, 1000 + half, checkpoint)
    info = SessionInfo(
        session_id="s",
        worktree_id="r::/w",
        pane_key="t:l",
        tab_id="t",
        argv=["sh"],
        cwd="/",
        pid=1,
        cols=COLS,
        rows=ROWS,
        launch_token_sha256="0" * 64,
    )
    rebuilt = rebuild_model(info, path, 1000, SESSION)
    assert rebuilt.screen_state() == model_of(SESSION).screen_state()
    path.write_bytes(b"\x00" * 8 + b"not a checkpoint")  # damaged: the journal alone rebuilds it
    assert (
        rebuild_model(info, path, 1000, SESSION).screen_state() == model_of(SESSION).screen_state()
    )


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(SESSION)), max_size=40))
def test_any_chunking_gives_the_same_screen(cuts: list[int]) -> None:
    """The model's screen does not depend on how the output was split into reads."""
    bounds = sorted({0, len(SESSION), *cuts})
    chunked = TerminalModel(COLS, ROWS)
    for a, b in itertools.pairwise(bounds):
        chunked.feed(SESSION[a:b])
    assert chunked.screen_state() == model_of(SESSION).screen_state()


@given(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=30))
def test_query_filter_is_chunking_invariant(sizes: list[int]) -> None:
    """Queries are stripped however the output is split; everything else passes."""
    data = b"a\x1b[6nb\x1b[>c\x1b]11;?\x1b\\c\x1b[1;31md\x1b]0;t\x07e\x1b[5n"
    out, i, k = b"", 0, 0
    f = QueryFilter()
    while i < len(data):
        n = sizes[k % len(sizes)]
        out += f.feed(data[i : i + n])
        i, k = i + n, k + 1
    assert out == b"abc\x1b[1;31md\x1b]0;t\x07e"


def test_restore_sequence_resets_what_programs_leave_on() -> None:
    """Detach's restore leaves a terminal in the primary screen with everything off."""
    user = model_of(
        LOG[:500], MOUSE_TUI, b"\x1b[?1h\x1b=\x1b[?25l\x1b[1;35m", RESTORE_USER_TERMINAL
    )
    modes = user.modes
    assert not (
        modes.alt_screen
        or modes.mouse
        or modes.bracketed_paste
        or modes.keypad
        or modes.cursor_keys
    )
    assert modes.cursor_visible


_TEXT = st.lists(
    st.one_of(
        st.text(alphabet="abc xyz-", min_size=1, max_size=150).map(str.encode),
        st.sampled_from(
            [b"\r\n", b"\x1b[31m", b"\x1b[44m", b"\x1b[0m", "界".encode(), "é".encode(), b"\x1b[K"]
        ),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(
    _TEXT,
    st.integers(min_value=8, max_value=120),
    st.integers(min_value=3, max_value=30),
)
def test_a_reattached_screen_reflows_as_the_watched_one(
    parts: list[bytes], cols: int, rows: int
) -> None:
    """Resized after a reattach (a narrower pane, a wider window), the client shows what
    a client that watched the output shows: the snapshot draws no blanks to wrap and
    keeps the program's soft wraps (before, every row was drawn full width: a narrower
    pane showed the blanks wrapped and the text scrolled away)."""
    output = b"".join(parts)
    watcher = model_of(output)
    client = model_of(model_of(output).snapshot())
    watcher.resize(cols, rows)
    client.resize(cols, rows)
    assert client.screen_state().cells == watcher.screen_state().cells
    assert client.cursor == watcher.cursor
