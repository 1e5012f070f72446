"""``orca auto``'s own parsing (issue 38): intervals, the local zone, refusals before
anything is asked of the service."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orca.cli.auto import local_zone_name, parse_every
from orca.cli.main import run


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("5m", 300), ("6h", 21600), ("1d", 86400), ("1h30m", 5400), ("2W", 1209600)],
)
def test_intervals(text: str, seconds: int) -> None:
    assert parse_every(text) == seconds


@pytest.mark.parametrize("text", ["", "6", "h", "6x", "0s", "-5m", "1.5h", "6h ", "6 h", "6hh"])
def test_what_is_not_an_interval(text: str) -> None:
    if text == "6h ":  # surrounding blanks are forgiven
        assert parse_every(text) == 21600
        return
    with pytest.raises(ValueError):
        parse_every(text)


@given(st.lists(st.tuples(st.integers(1, 999), st.sampled_from("smhdw")), min_size=1, max_size=4))
def test_an_interval_is_the_sum_of_its_parts(parts: list[tuple[int, str]]) -> None:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    text = "".join(f"{n}{u}" for n, u in parts)
    assert parse_every(text) == sum(n * units[u] for n, u in parts)


def test_the_local_zone_comes_from_tz_when_it_names_one() -> None:
    assert local_zone_name({"TZ": ":Europe/Paris"}) == "Europe/Paris"
    assert local_zone_name({"TZ": "/etc/localtime"}) == local_zone_name({})


@pytest.mark.parametrize(
    "argv",
    [
        ["auto", "add", "n", "repo", "p", "--agents", "claude", "--every", "6x"],
        ["auto", "add", "n", "repo", "p", "--agents", "nobody", "--every", "6h"],
        ["auto", "add", "n", "repo", "p", "--agents", "claude", "--every", "6h", "--tz", "UTC"],
        ["auto", "add", "n", "repo", "p", "--agents", "claude"],
        [
            "auto",
            "add",
            "n",
            "repo",
            "p",
            "--agents",
            "claude",
            "--every",
            "1h",
            "--cron",
            "* * * * *",
        ],
    ],
)
def test_bad_input_is_one_line_and_exit_2_without_the_service(
    argv: list[str], orca_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = run(argv)
    except SystemExit as exc:  # argparse's own refusals: its usage, then one error line
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines()[-1].count("error") <= 1 and "Traceback" not in err, err
    assert not (orca_home / "data").exists() or not any((orca_home / "data").iterdir())
