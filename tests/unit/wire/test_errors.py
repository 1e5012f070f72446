"""Error classes register their wire codes themselves; a reply decodes to the same class."""

from __future__ import annotations

import pytest

from orca.wire.errors import Conflict, OrcaError, Timeout, error_from_wire


def test_every_declared_code_round_trips_to_its_class() -> None:
    """Each class that declares a code comes back from the wire as that class."""
    seen = [Timeout, Conflict]
    for cls in seen:
        assert type(error_from_wire(cls("x").to_wire())) is cls


def test_a_new_error_class_is_known_to_the_decoder_without_a_second_list() -> None:
    """Declaring a subclass with a fresh code is enough for ``error_from_wire``."""

    class Gone(OrcaError):
        code = "test_gone_for_registration"

    back = error_from_wire({"code": "test_gone_for_registration", "message": "m"})
    assert type(back) is Gone and back.message == "m"


def test_two_classes_cannot_declare_one_code() -> None:
    """A duplicate code is a bug found at import, not a silently wrong decode."""
    with pytest.raises(TypeError, match="already Conflict"):

        class AlsoConflict(OrcaError):
            code = "conflict"


def test_a_subclass_without_its_own_code_travels_as_its_parent() -> None:
    """Finer classes on the raising side need no code of their own."""

    class Locked(Conflict):
        pass

    assert type(error_from_wire(Locked("busy").to_wire())) is Conflict
