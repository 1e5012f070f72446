"""``orca.build.source_build_id``: the build shown by ``sys.hello``/``orca status``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from orca import build as sys_contract
from orca.build import (
    BUILD_ID_CHARS,
    adopt_build,
    build_id,
    build_stamp,
    package_roots,
    source_build_id,
    source_stamp,
    starter_build,
)


def tree(root: Path) -> list[Path]:
    (root / "orca" / "sub").mkdir(parents=True)
    (root / "orca" / "__init__.py").write_text("VERSION = 1\n")
    (root / "orca" / "sub" / "m.py").write_text("x = 'ü'\n")
    (root / "orca" / "__pycache__").mkdir()
    (root / "orca" / "__pycache__" / "m.py").write_bytes(b"\x00not source")
    return [root / "orca"]


def test_same_source_anywhere_is_the_same_build_and_any_change_is_another(
    tmp_path: Path,
) -> None:
    a = tree(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    b = [tmp_path / "b" / "orca"]
    assert source_build_id(a) == source_build_id(b)
    assert len(source_build_id(a)) == BUILD_ID_CHARS
    (b[0] / "__pycache__" / "m.py").write_bytes(b"changed bytecode only")
    assert source_build_id(a) == source_build_id(b)
    (b[0] / "sub" / "m.py").write_text("x = 'u'\n")
    assert source_build_id(a) != source_build_id(b)
    (b[0] / "sub" / "m.py").write_text("x = 'ü'\n")
    (b[0] / "sub" / "new.py").write_text("")
    assert source_build_id(a) != source_build_id(b), "an added empty module is a change"


def test_the_running_build_hashes_the_imported_packages() -> None:
    roots = package_roots()
    assert {r.name for r in roots} == {"orca", "actors"}
    build_id.cache_clear()  # read once per process: another test may have asked before
    assert build_id() == source_build_id(roots)


def test_the_stamp_moves_with_any_touched_added_or_resized_module(tmp_path: Path) -> None:
    """``orca status`` trusts orcad's build when the stamps match: any change must move it."""
    roots = tree(tmp_path / "a")
    before = source_stamp(roots)
    assert source_stamp(roots) == before
    (roots[0] / "__pycache__" / "m.py").write_bytes(b"bytecode is not source")
    assert source_stamp(roots) == before
    module = roots[0] / "sub" / "m.py"
    st = module.stat()
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    touched = source_stamp(roots)
    assert touched != before
    (roots[0] / "sub" / "new.py").write_text("")
    assert source_stamp(roots) not in (before, touched)
    assert source_stamp([tmp_path / "gone"]) != before, "a missing root is no stamp"


@pytest.fixture
def fresh_build() -> Iterator[None]:
    """``build_id`` read anew, nothing adopted, before and after."""
    build_id.cache_clear()
    sys_contract._adopted.clear()
    yield
    build_id.cache_clear()
    sys_contract._adopted.clear()


@pytest.mark.usefixtures("fresh_build")
def test_a_started_process_takes_its_starters_build_only_for_the_same_files() -> None:
    """The fd keeper takes orcad's build instead of hashing (and loading OpenSSL for it),
    but only when its files' stamp is the one orcad took before hashing."""
    handed = starter_build()
    assert handed == f"{build_stamp()}:{source_build_id(package_roots())}"
    build_id.cache_clear()
    assert not adopt_build(f"{build_stamp()}x:feedfacecafe"), "files changed since: hashed"
    assert not adopt_build(None) and not adopt_build("") and not adopt_build(build_stamp())
    assert build_id() == source_build_id(package_roots())
    build_id.cache_clear()
    assert adopt_build(f"{build_stamp()}:feedfacecafe")
    assert build_id() == "feedfacecafe"  # taken as handed: the starter hashed these files
