"""How the UI's columns share the terminal: the sidebar, the terminal panes, the review.

Pure: the terminal's width and whether the review is open in, an :class:`Arrangement`
out. The app applies it at every resize and when the review opens or closes
(``OrcaApp.arrange``).

The review used to be 70 columns whatever the width: at 90 columns the sidebar's 38
and the review's 70 left the terminal panes one column, and the review itself was cut.
Now the terminal panes come first:

- the sidebar keeps :data:`SIDEBAR_WIDTH` while that leaves the panes
  :data:`TERMINAL_MIN_WIDTH`, narrowing down to :data:`SIDEBAR_MIN_WIDTH` on a small
  terminal;
- the review goes *beside* the panes when it can have :data:`REVIEW_MIN_WIDTH` and
  they keep :data:`TERMINAL_MIN_WIDTH` (it takes at most half of what the sidebar
  leaves, at most :data:`REVIEW_MAX_WIDTH`), else *below* them, the full width, half
  the height.

Invariant: whenever ``width >= SIDEBAR_MIN_WIDTH + TERMINAL_MIN_WIDTH``, the terminal
panes' column is at least :data:`TERMINAL_MIN_WIDTH` wide, review open or not, and
sidebar, panes and review together never take more than ``width``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SIDEBAR_WIDTH = 38  # a worktree's name, branch, counts and a few lights on one row
SIDEBAR_MIN_WIDTH = 20  # a name and its lights; narrower, every row is mostly cut
# Half an 80-column terminal: a prompt and a line of output; a pane narrower than this
# wraps every command (at 90 columns the review used to leave one column).
TERMINAL_MIN_WIDTH = 40
# Beside the panes, a review narrower than this wraps nearly every diff line: it goes
# below them instead.
REVIEW_MIN_WIDTH = 40
REVIEW_MAX_WIDTH = 82  # an 80-column diff line and the pane's border; wider stays blank
REVIEW_SHARE = 2  # beside the panes, the review takes at most 1/2 of what the sidebar leaves

ReviewPlace = Literal["hidden", "beside", "below"]


@dataclass(frozen=True)
class Arrangement:
    """The sidebar's columns, where the review goes, and its columns when beside the
    panes (below them it takes the panes' width and half the height)."""

    sidebar_width: int
    review: ReviewPlace
    review_width: int = 0

    def panes_width(self, width: int) -> int:
        """The terminal panes' column (borders included) in a terminal ``width`` wide."""
        return max(
            0, width - self.sidebar_width - (self.review_width if self.review == "beside" else 0)
        )


def arrange(width: int, review_open: bool) -> Arrangement:
    """The columns for a terminal ``width`` wide, with or without the review."""
    sidebar = max(SIDEBAR_MIN_WIDTH, min(SIDEBAR_WIDTH, width - TERMINAL_MIN_WIDTH))
    if not review_open:
        return Arrangement(sidebar, "hidden")
    rest = max(0, width - sidebar)
    beside = min(REVIEW_MAX_WIDTH, rest // REVIEW_SHARE)
    if beside >= REVIEW_MIN_WIDTH and rest - beside >= TERMINAL_MIN_WIDTH:
        return Arrangement(sidebar, "beside", beside)
    return Arrangement(sidebar, "below")
