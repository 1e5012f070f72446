"""The process's execution host id comes from ORCA_HOST_ID, validated (ARCHITECTURE §4)."""

from __future__ import annotations

import pytest

from orca.host import current_host_id


def test_unset_means_local() -> None:
    """A plain local install is the ``local`` host."""
    assert current_host_id({}) == "local"


def test_remote_host_ids_are_accepted() -> None:
    """ssh:/runtime: ids with a percent-encoded target are valid host ids."""
    assert current_host_id({"ORCA_HOST_ID": "ssh:user%40box"}) == "ssh:user%40box"
    assert current_host_id({"ORCA_HOST_ID": "runtime:env-1"}) == "runtime:env-1"


@pytest.mark.parametrize("bad", ["elsewhere", "ssh:", "ssh:%zz"])
def test_invalid_host_ids_are_refused(bad: str) -> None:
    """Anything that does not parse as an execution host id is refused with the variable named."""
    with pytest.raises(ValueError, match="ORCA_HOST_ID"):
        current_host_id({"ORCA_HOST_ID": bad})
