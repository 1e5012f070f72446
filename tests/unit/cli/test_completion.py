"""Shell completion's candidates: commands, options, choices; live names only when up."""

from __future__ import annotations

import argparse

import pytest

from orca.cli.completion import DYNAMIC, FREE_TEXT, SCRIPTS, candidates, run_complete
from orca.cli.parser import COMMAND_MODULES, TOPICS, build_parser


@pytest.fixture(autouse=True)
def _empty_home(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "home"))


def test_every_topic_module_adds_exactly_the_topics_main_routes_to_it() -> None:
    """main imports one topic's modules only; the table it routes by must be complete."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(sub.choices) == set(TOPICS)  # type: ignore[attr-defined]
    for topic in TOPICS:
        one = build_parser(topic)
        sub = next(a for a in one._actions if a.__class__.__name__ == "_SubParsersAction")
        assert topic in sub.choices  # type: ignore[attr-defined]
    assert set(COMMAND_MODULES) == {m for mods in TOPICS.values() for m in mods}


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["te"], ["term"]),
        (["term", "a"], ["attach"]),
        (["worktree", ""], ["create", "ls", "merge", "mv", "ps", "rm"]),
        (["hooks", "install", ""], ["claude", "codex", "gemini"]),
        (["completion", "z"], ["zsh"]),
        (["worktree", "ls", "--a"], ["--all"]),
        (["logs", ""], ["orcad"]),
    ],
)
def test_commands_options_and_choices_complete(words: list[str], expected: list[str]) -> None:
    assert candidates(words) == expected


@pytest.mark.parametrize(
    "words",
    [
        ["term", "attach", ""],
        ["term", "kill", ""],
        ["ack", ""],
        ["restart", ""],
        ["folder", "rm", ""],
        ["worktree", "rm", ""],
        ["repo", "rm", ""],
        ["term", "new", "x", "--", ""],
    ],
)
def test_live_names_while_the_service_is_down_are_nothing(
    words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """No service: no candidates and not a word on stdout or stderr (Tab stays quiet)."""
    assert run_complete(["--", *words]) == 0
    assert capsys.readouterr() == ("", "")


def test_bash_candidates_drop_what_bash_splits_off_at_a_colon() -> None:
    """bash completes `fix-login:3f` as `3f`: the candidate must start after the colon."""
    assert candidates(["completion", "ba"]) == ["bash"]
    for shell, script in SCRIPTS.items():
        assert "orca __complete" in script, shell


def _positionals(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, str, str, bool]]:
    """(topic, subcommand, dest, has choices) of every positional argument of the tree."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.extend(_positionals(sub, (*path, name)))
        elif not action.option_strings:
            topic, command = [*path, ""][:2]
            found.append((topic, command, action.dest, action.choices is not None))
    return found


def test_every_argument_that_names_something_completes_its_names() -> None:
    """A terminal, worktree, repo, folder, actor or host argument - `ack`'s included -
    has live names to offer; the rest take free text (a path, a new name, a command)."""
    for topic, command, dest, has_choices in _positionals(build_parser()):
        key = (topic, command, dest)
        assert has_choices or key in DYNAMIC or key in FREE_TEXT, key
