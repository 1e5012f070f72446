"""The uncommitted part of a variant's diffstat (issue 40 item 6): git's numstat and
porcelain lines, read."""

from __future__ import annotations

from actors.gitwatch.mergeplan import numstat_totals, untracked_paths


def test_numstat_totals_count_files_and_lines_binary_as_a_file() -> None:
    out = "3\t1\tsrc/a.py\n-\t-\timg.png\n0\t7\tREADME\n"
    assert numstat_totals(out) == (3, 3, 8)
    assert numstat_totals("") == (0, 0, 0)


def test_untracked_paths_are_the_double_question_lines() -> None:
    lines = [" M src/a.py", "?? new.txt", "?? dir/x y.py", '?? "t\\303\\251st"', "A  staged"]
    assert untracked_paths(lines) == ["new.txt", "dir/x y.py"]
