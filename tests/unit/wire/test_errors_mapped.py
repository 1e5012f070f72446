"""orca.wire.errors.mapped_error: foreign errors to ours by the first matching row."""

from __future__ import annotations

from orca.wire.errors import BadRequest, Conflict, Internal, Unavailable, mapped_error


class Full(Exception):
    pass


class Ended(Exception):
    pass


class EndedHard(Ended):
    pass


def test_first_matching_row_wins_else_the_default_with_the_message() -> None:
    table = (((Full, KeyError), Unavailable), (Ended, Conflict), (Exception, BadRequest))
    assert type(mapped_error(KeyError("k"), table, Internal)) is Unavailable
    got = mapped_error(EndedHard("gone"), table, Internal)
    assert type(got) is Conflict and got.message == "gone"
    assert type(mapped_error(ValueError("v"), table[:2], Internal)) is Internal
