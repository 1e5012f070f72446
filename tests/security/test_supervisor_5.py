"""Issue 16 item 5 (orcad's part): a full disk killed orcad through its log writer, and
every actor and agent with it.

On a real 2 MiB tmpfs as ``ORCA_HOME``, filled to the last byte: an actor's output that
cannot be logged is dropped and counted (``actor.log_failing``, ``sup.status``, ``orca
status``), orcad and every actor keep their pids, and once space is freed the log is
written again (``actor.log_recovered``) with the new output in the file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from fixture_actors.contracts import TEST_EXIT, ExitArgs
from support.lifecycle import lifecycle
from support.procs import end_profile, run_cli, write_config
from support.tmpfs import mount_tmpfs, needs_tmpfs, umount

from orca.actor import open_rpc_client
from orca.contracts import supervisor as sup
from orca.paths import resolve_paths

CONFIG = """
[supervisor]
heartbeat_interval_s = 0.2
heartbeat_timeout_s = 2.0
backoff_initial_s = 0.1
backoff_max_s = 0.2
intensity = 50
ready_timeout_s = 20
shutdown_grace_s = 2

[[child]]
name = "alpha"
module = "fixture_actors.steady"

[[child]]
name = "beta"
module = "fixture_actors.steady"
"""


@pytest.fixture
def small_disk_home(tmp_path: Path) -> Iterator[Path]:
    """An ORCA_HOME on its own 2 MiB tmpfs; whatever orcad runs there is killed after."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    assert mount_tmpfs(mnt, "2m")
    home = mnt / "home"
    home.mkdir()
    try:
        yield home
    finally:
        end_profile(home)  # orcad's tree and the keeper, which restart each other
        umount(mnt)


def _append_until_full(path: Path, fill_byte: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        chunk = fill_byte * 65536
        while True:
            try:
                os.write(fd, chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                if len(chunk) == 1:
                    return
                chunk = chunk[: len(chunk) // 2]
    finally:
        os.close(fd)


def fill(disk: Path, log: Path) -> Path:
    """Write ``disk/filler`` until the filesystem has no byte left (ENOSPC), then the
    slack of ``log``'s last page too (tmpfs lets a file grow into its page for free)."""
    filler = disk / "filler"
    _append_until_full(filler, b"\0")
    _append_until_full(log, b"\n")
    return filler


@needs_tmpfs
async def test_full_disk_drops_log_lines_and_kills_nothing(small_disk_home: Path) -> None:
    """Log writes fail with ENOSPC: orcad and the actors live on, the drop is reported,
    and logging resumes once space returns."""
    home = small_disk_home
    with trio.fail_after(90):
        write_config(home, CONFIG)
        result = run_cli(home, "up")
        assert result.returncode == 0, result.stderr
        paths = resolve_paths({"ORCA_HOME": str(home)})
        orcad_info = sup.read_lock_info(paths.lock_file)
        assert orcad_info is not None
        async with (
            open_rpc_client(paths.ipc_endpoint("supervisor", "rpc")) as orcad,
            lifecycle(home) as (mirror, rec),
        ):
            before = {a.name: a.pid for a in (await orcad.invoke(sup.STATUS)).actors}

            async def restart_alpha() -> int:
                """Make alpha exit; its new process logs its start-up line."""
                (old,) = [
                    a.pid for a in (await orcad.invoke(sup.STATUS)).actors if a.name == "alpha"
                ]
                since = len(rec.typed)
                async with open_rpc_client(paths.ipc_endpoint("alpha", "rpc")) as alpha:
                    with contextlib.suppress(Exception):
                        await alpha.invoke(TEST_EXIT, ExitArgs(code=1), timeout=0.5)

                # Only a start recorded after the exit was asked is the new process: an
                # older start (a pid other than ``old``) would return a stale pid.
                def restarted() -> list[sup.ActorStarted]:
                    return [d for d in rec.of(sup.STARTED, "alpha", since) if d.pid != old]

                await mirror.wait_until(lambda m: bool(restarted()))
                return restarted()[-1].pid

            filler = fill(home.parent, paths.log_file("alpha"))
            await restart_alpha()
            await mirror.wait_until(lambda m: rec.seen(sup.LOG_FAILING, "alpha"))
            (failing,) = rec.of(sup.LOG_FAILING, "alpha")
            assert "ENOSPC" in failing.error and failing.dropped_lines >= 1

            status = await orcad.invoke(sup.STATUS)
            assert status.supervisor.pid == orcad_info.pid, "orcad survived the full disk"
            rows = {a.name: a for a in status.actors}
            assert rows["alpha"].state == "running" and rows["beta"].pid == before["beta"]
            alpha_log = rows["alpha"].log
            assert alpha_log is not None and alpha_log.error is not None
            assert "ENOSPC" in alpha_log.error and alpha_log.dropped_lines >= 1
            shown = run_cli(home, "status")
            assert shown.returncode == 0, shown.stderr
            assert "warning: log of alpha failing: ENOSPC" in shown.stdout
            as_json = json.loads(run_cli(home, "status", "--json").stdout)["actors"]
            assert {a["name"]: a["log"] is not None for a in as_json}["alpha"]

            # Space comes back: the next output after the retry interval is written.
            filler.unlink()
            pid = before["alpha"]
            while not rec.seen(sup.LOG_RECOVERED, "alpha"):
                pid = await restart_alpha()
            rows = {a.name: a for a in (await orcad.invoke(sup.STATUS)).actors}
            recovered = rows["alpha"].log
            assert recovered is not None and recovered.error is None
            assert recovered.dropped_lines >= failing.dropped_lines
            await orcad.invoke(sup.STATUS)
        assert rows["beta"].pid == before["beta"] and rows["beta"].restarts == 0
        assert sup.read_lock_info(paths.lock_file) == orcad_info
        assert f"alpha[{pid}]" in paths.log_file("alpha").read_text(errors="replace")
        assert "writing again" in run_cli(home, "status").stdout
