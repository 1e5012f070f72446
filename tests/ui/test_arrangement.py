"""How the sidebar, the terminal panes and the review share the width
(``actors/ui/arrangement.py``): pure rules, then the app at 90x30 and 60x20 (issue 32:
at 90 columns the review's fixed 70 columns left the terminal pane one column)."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from support.ui_pilot import open_shell, ready
from textual.geometry import Region
from textual.widget import Widget

from actors.ui.app import OrcaApp
from actors.ui.arrangement import (
    REVIEW_MAX_WIDTH,
    REVIEW_MIN_WIDTH,
    SIDEBAR_MIN_WIDTH,
    SIDEBAR_WIDTH,
    TERMINAL_MIN_WIDTH,
    arrange,
)
from orca.paths import resolve_paths

WIDTHS = st.integers(min_value=SIDEBAR_MIN_WIDTH + TERMINAL_MIN_WIDTH, max_value=500)


@given(WIDTHS, st.booleans())
def test_the_terminal_panes_keep_their_minimum_width(width: int, review: bool) -> None:
    """Review open or not, the panes keep TERMINAL_MIN_WIDTH and nothing overflows."""
    plan = arrange(width, review)
    assert SIDEBAR_MIN_WIDTH <= plan.sidebar_width <= SIDEBAR_WIDTH
    assert plan.panes_width(width) >= TERMINAL_MIN_WIDTH
    assert plan.sidebar_width + plan.panes_width(width) + plan.review_width <= width
    assert (plan.review == "hidden") == (not review)


@given(WIDTHS)
def test_a_review_beside_the_panes_takes_at_most_half_of_what_the_sidebar_leaves(
    width: int,
) -> None:
    """Beside the panes the review has REVIEW_MIN_WIDTH..REVIEW_MAX_WIDTH and at most half;
    where it cannot, it goes below them (the panes' full width)."""
    plan = arrange(width, True)
    rest = width - plan.sidebar_width
    if plan.review == "beside":
        assert REVIEW_MIN_WIDTH <= plan.review_width <= min(REVIEW_MAX_WIDTH, rest // 2)
    else:
        assert plan.review == "below" and plan.review_width == 0
        assert rest < REVIEW_MIN_WIDTH + TERMINAL_MIN_WIDTH


def test_the_sidebar_keeps_its_width_while_the_panes_can_have_theirs() -> None:
    """At 90 columns the sidebar is as before; at 60 it narrows for the panes."""
    assert arrange(90, False).sidebar_width == SIDEBAR_WIDTH
    assert arrange(60, False).sidebar_width == 60 - TERMINAL_MIN_WIDTH


def rendered_text(widget: Widget) -> str:
    """Every line the widget draws, its part scrolled out of view included."""
    size = widget.size
    return "\n".join(s.text for s in widget.render_lines(Region(0, 0, size.width, size.height)))


LONG_WORDS = [f"word{i}" for i in range(40)]  # one diff line of ~300 columns


def test_the_review_leaves_the_terminal_usable_on_a_narrow_screen(tree: Any, drive: Any) -> None:
    """At 90x30 and 60x20 with the review open, the terminal pane keeps 30+ columns and
    every word of a diff line wider than the review is shown (wrapped, not cut). Before,
    the review was 70 columns: the pane got one at 90, and long lines were cut."""
    alpha = tree.worktrees["alpha"]
    with open(f"{tree.paths['alpha']}/README", "a", encoding="utf-8") as readme:
        readme.write(" ".join(LONG_WORDS) + " TAIL\n")

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        view = await open_shell(app, pilot, alpha)
        app.action_focus_sidebar()
        await pilot.press("d")
        await app.wait_for(lambda: [f.path for f in app.review_files] == ["README"], 20)
        review, diff = app.query_one("#review"), app.query_one("#review-diff")
        for width, height in ((90, 30), (60, 20)):
            await pilot.resize_terminal(width, height)
            await app.wait_for(lambda w=width: app.size.width == w)
            await pilot.pause()
            assert view.region.width >= 30, (width, view.region)
            # The PTY follows the pane: the shell sees the usable width too.
            await app.wait_for(lambda: view.model.size == tuple(view.content_size), 10)
            assert view.region.right <= width and review.region.right <= width
            assert review.region.width >= 30, (width, review.region)
            shown = rendered_text(diff)
            assert set(re.findall(r"\bword\d+\b", shown)) == set(LONG_WORDS), shown
            assert "TAIL" in shown

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
