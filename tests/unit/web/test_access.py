"""Devices and pairing: one-time codes, the token, revocation, the file (issue 27)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from actors.web.access import MAX_FAILURES, Access, Throttled
from orca.fsio import LockHeld
from orca.web_devices import DevicesFile, DevicesFileError


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def _access(tmp_path: Path, token: str = "") -> tuple[Access, Clock]:
    clock = Clock()
    access = Access(DevicesFile(tmp_path), token, clock)
    access.load()
    return access, clock


def test_a_code_pairs_one_device_once_with_its_scopes(tmp_path: Path) -> None:
    access, _ = _access(tmp_path)
    code, _ = access.pair("phone", ("approve", "view"), 60)
    paired = access.redeem(code)
    assert paired is not None
    record, credential = paired
    assert record.scopes == ("view", "approve")  # in SCOPES order
    assert access.authenticate(credential) == access.devices()[0]
    assert access.redeem(code) is None


def test_an_expired_code_and_a_wrong_credential_do_not_sign_in(tmp_path: Path) -> None:
    access, clock = _access(tmp_path)
    code, _ = access.pair("phone", ("view",), 1)
    clock.now += 1001
    assert access.redeem(code) is None
    paired = access.redeem(access.pair("p", ("view",), 60)[0])
    assert paired is not None
    device_id = paired[0].device_id
    assert access.authenticate(f"{device_id}.wrong") is None
    assert access.authenticate("nodot") is None and access.authenticate(None) is None


def test_the_token_gives_every_scope_and_guessing_is_throttled(tmp_path: Path) -> None:
    access, clock = _access(tmp_path, token="T" * 32)
    for _ in range(MAX_FAILURES):
        assert access.login("guess", "x", "10.0.0.9") is None
    with pytest.raises(Throttled):
        access.login("T" * 32, "x", "10.0.0.9")  # throttled, even the right one
    assert access.login("T" * 32, "phone", "10.0.0.7") is not None  # another client
    clock.now += 61_000
    paired = access.login("T" * 32, "laptop", "10.0.0.9")
    assert paired is not None and paired[0].scopes == ("view", "type", "approve")


def test_wrong_guesses_never_lock_the_owner_out_of_a_fresh_code(tmp_path: Path) -> None:
    """Issue 33: 20 wrong tokens a minute from any local user refused the owner's fresh
    pairing code for the rest of the window (one global counter)."""
    access, _ = _access(tmp_path, token="T" * 32)
    for _ in range(MAX_FAILURES):
        assert access.redeem("guess", "127.0.0.1") is None
    with pytest.raises(Throttled):
        access.redeem("guess", "127.0.0.1")
    with pytest.raises(Throttled):
        access.login("guess", "x", "127.0.0.1")
    code, _ = access.pair("phone", ("view",), 60)
    assert access.redeem(code, "127.0.0.1") is not None  # the same address, too


def test_no_token_configured_means_no_token_login(tmp_path: Path) -> None:
    access, _ = _access(tmp_path)
    assert access.login("", "x") is None


def test_revocation_is_saved_and_the_file_is_private(tmp_path: Path) -> None:
    access, _ = _access(tmp_path)
    record, credential = access.redeem(access.pair("phone", ("view",), 60)[0])  # type: ignore[misc]
    file = DevicesFile(tmp_path)
    mode = stat.S_IMODE(os.stat(file.path).st_mode)
    assert mode == 0o600 and stat.S_IMODE(os.stat(file.dir).st_mode) == 0o700
    assert credential.split(".", 1)[1] not in file.path.read_text()  # only its digest
    assert access.revoke(record.device_id) and not access.revoke(record.device_id)
    assert access.authenticate(credential) is None
    access.close()
    again, _ = _access(tmp_path)
    assert again.devices() == []


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    _access(tmp_path)
    with pytest.raises(LockHeld):
        Access(DevicesFile(tmp_path), "", Clock()).load()
    assert not DevicesFile(tmp_path).try_acquire()


def test_a_damaged_file_is_refused_not_emptied(tmp_path: Path) -> None:
    file = DevicesFile(tmp_path)
    file.dir.mkdir(mode=0o700)
    file.path.write_text('{"version": 1, "devices": [{"deviceId": "x"}]}')
    with pytest.raises(DevicesFileError):
        Access(DevicesFile(tmp_path), "", Clock()).load()
    assert "deviceId" in file.path.read_text()
