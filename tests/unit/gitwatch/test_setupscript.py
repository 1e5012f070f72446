"""Reading the `setup:` key of orca.yaml without a YAML library."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.gitwatch.setupscript import UnsupportedSetup, parse_setup_script


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("setup: npm ci\n", "npm ci"),
        ("name: x\nsetup: 'make all'  # build\n", "make all"),
        ('setup: "echo \\"hi\\""\n', 'echo "hi"'),
        ("setup: |\n  uv sync\n  cp a b\nnext: 1\n", "uv sync\ncp a b"),
        ("setup: |-\n    one\n\n      indented\n", "one\n\n  indented"),
        ("other: 1\n", None),
        ("  setup: nested, not top-level\n", None),
        ("setup:\n", None),
        ("setup: echo a#b\n", "echo a#b"),
    ],
)
def test_setup_shapes(text: str, expected: str | None) -> None:
    """Plain, quoted and `|` block setups parse; nested or empty keys mean no setup."""
    assert parse_setup_script(text) == expected


@pytest.mark.parametrize("value", ["[a, b]", ">\n  folded", "- item", "\n  - npm ci", "\n  a: b"])
def test_other_yaml_constructs_are_refused_not_guessed(value: str) -> None:
    """A list, flow map or folded block is reported as unsupported."""
    with pytest.raises(UnsupportedSetup):
        parse_setup_script(f"setup: {value}\n")


@given(
    st.lists(
        st.text("abc xyz;&|$-_.=/", min_size=1).map(str.strip).filter(bool), min_size=1, max_size=5
    )
)
def test_block_round_trips_its_lines(lines: list[str]) -> None:
    """Any block of command lines comes back exactly, de-indented."""
    text = "setup: |\n" + "".join(f"  {line}\n" for line in lines) + "after: 1\n"
    assert parse_setup_script(text) == "\n".join(lines)
