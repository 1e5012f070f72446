"""``orca repo add|ls|rm`` and ``orca state export`` against a real store process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import trio
from support.actors import actor_env as store_env
from support.actors import running_store

from orca.contracts import store as contract


async def orca(home: Path, *argv: str) -> tuple[int, str, str]:
    env = {**store_env(home), "COLUMNS": "250"}  # rich would shorten ids to fit 80 columns
    result = await trio.run_process(
        [sys.executable, "-m", "orca.cli.main", *argv],
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def test_repo_add_ls_rm_round_trip(tmp_path: Path) -> None:
    """add by path (git detected), ls as table and --json, rm by name; then by id: gone."""
    checkout = tmp_path / "my-app"
    (checkout / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    with trio.fail_after(60):
        async with running_store(home):
            code, out, _ = await orca(home, "repo", "add", str(checkout))
            assert code == 0 and "added my-app" in out
            code, _, err = await orca(home, "repo", "add", str(checkout))
            assert code == 2 and "already added" in err  # a conflict with the state: input
            code, _, err = await orca(home, "repo", "add", str(tmp_path / "missing"))
            assert code == 2 and "not a directory" in err
            code, out, _ = await orca(home, "repo", "ls", "--json")
            (repo,) = json.loads(out)["repos"]
            assert (repo["path"], repo["kind"], repo["displayName"]) == (
                str(checkout),
                "git",
                "my-app",
            )
            assert repo["handle"] == "my-app"
            code, out, _ = await orca(home, "repo", "ls")
            header, row = out.splitlines()
            assert code == 0 and header.startswith("REPO ") and row.startswith("my-app ")
            assert row.endswith(str(checkout))
            code, out, _ = await orca(home, "repo", "rm", "my-app")  # a name, as elsewhere
            assert code == 0 and f"removed my-app ({repo['id']};" in out
            code, _, err = await orca(home, "repo", "rm", repo["id"])
            assert code == 2 and "no repo" in err


async def test_state_export_prints_pretty_json_of_the_whole_state(tmp_path: Path) -> None:
    """The export is the persisted state, indented, unknown settings included."""
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            await store.invoke(contract.SETTINGS_PATCH, contract.PatchArgs(patch={"theme": "dark"}))
            code, out, _ = await orca(tmp_path, "state", "export")
            assert code == 0 and out.startswith("{\n  ")
            exported = json.loads(out)
            assert exported["settings"]["theme"] == "dark" and exported["schemaVersion"] == 1
            target = tmp_path / "export.json"
            assert (await orca(tmp_path, "state", "export", "-o", str(target)))[0] == 0
            assert json.loads(target.read_text()) == exported


async def test_cli_says_the_service_is_not_running(tmp_path: Path) -> None:
    """Without a store, exit code 3 and a hint."""
    with trio.fail_after(30):
        code, _, err = await orca(tmp_path, "repo", "ls")
    assert code == 3 and "orca" in err


async def test_state_status_warns_after_a_recovery_from_backup(tmp_path: Path) -> None:
    """A load from backup is shown to the user, with where the bad file went (seed 02 §13)."""
    from orca.paths import resolve_paths

    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/src/a"))
            await store.stop()
        code, out, _ = await orca(tmp_path, "state", "status")
        assert code == 3  # not running
        primary = resolve_paths({"ORCA_HOME": str(tmp_path)}).state_file
        primary.write_bytes(primary.read_bytes()[:10])
        async with running_store(tmp_path):
            code, out, _ = await orca(tmp_path, "state", "status")
            assert code == 0
            assert "warning: orca-data.json was unreadable; loaded orca-data.json.bak.0" in out
            assert "orca-data.json.corrupt-" in out
            code, out, _ = await orca(tmp_path, "state", "status", "--json")
            (store_stats,) = json.loads(out)["store"]
            assert store_stats["load"]["source"] == "backup"
