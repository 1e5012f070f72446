"""Issue 16 item 12 (hooks part): a damaged ``last-status.json`` was discarded with no
copy kept - the next save overwrote it.

Now the damaged file is kept aside under a timestamped name before anything can
overwrite it, byte for byte, and ``sys.stats`` of hooks names the copy and the damage.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from support.hooks_harness import running_hooks

from actors.hooks.actor import STATUS_FILE_NAME
from actors.hooks.persistence import DAMAGED_INFIX
from orca.contracts import sys as sys_contract
from orca.paths import resolve_paths

DAMAGED = {
    "truncated": (b'{"version":1,"rows":[{"paneKey":"tab-1:3f1c', "bad_json"),
    "not-utf8": (b'{"version":1,"rows":["\xfe\xff"]}', "bad_json"),
    "a-list": (b"[]", "not_an_object"),
    "future-version": (b'{"version":99,"rows":[]}', "unknown_version"),
    "rows-not-a-list": (b'{"version":1,"rows":{"a":1}}', "bad_rows"),
    "deep": (b'{"version":1,"rows":' + b"[" * 5000 + b"]" * 5000 + b"}", "too_deep"),
}


@pytest.mark.parametrize("name", list(DAMAGED))
async def test_damaged_status_file_is_kept_aside_and_reported(orca_home: Path, name: str) -> None:
    """The damaged bytes survive in a timestamped copy, named in sys.stats; hooks serves on."""
    data, damage = DAMAGED[name]
    hooks_dir = resolve_paths({"ORCA_HOME": str(orca_home)}).hooks_dir
    hooks_dir.mkdir(parents=True, mode=0o700)
    (hooks_dir / STATUS_FILE_NAME).write_bytes(data)
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            stats = await hooks.invoke(sys_contract.STATS)
            status, _ = await hooks.post(
                "claude", {"hook_event_name": "UserPromptSubmit", "session_id": "s"}
            )
            assert status == 200
    load = stats["hooks"]["statusFile"]["load"]
    assert load["damage"] == damage
    kept = sorted(hooks_dir.glob(f"{STATUS_FILE_NAME}{DAMAGED_INFIX}*"))
    assert [str(p) for p in kept] == [load["keptAside"]]
    assert kept[0].read_bytes() == data
    assert kept[0].stat().st_mode & 0o777 == 0o600
    # The fresh file the actor wrote afterwards is a different, valid one.
    assert (hooks_dir / STATUS_FILE_NAME).read_bytes() != data


async def test_a_sound_status_file_is_not_kept_aside(orca_home: Path) -> None:
    """A clean restart moves nothing aside and reports no damage."""
    with trio.fail_after(60):
        async with running_hooks(orca_home) as hooks:
            status, _ = await hooks.post(
                "claude", {"hook_event_name": "UserPromptSubmit", "session_id": "s"}
            )
            assert status == 200
        async with running_hooks(orca_home) as hooks:
            stats = await hooks.invoke(sys_contract.STATS)
            assert len(await hooks.rows()) == 1
    load = stats["hooks"]["statusFile"]["load"]
    assert (load["damage"], load["keptAside"], load["rows"]) == (None, None, 1)
    hooks_dir = resolve_paths({"ORCA_HOME": str(orca_home)}).hooks_dir
    assert not list(hooks_dir.glob(f"{STATUS_FILE_NAME}{DAMAGED_INFIX}*"))
