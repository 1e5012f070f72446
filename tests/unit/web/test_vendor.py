"""The vendored xterm.js is byte for byte what vendor.json records (issue 27)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

VENDOR = Path(__file__).resolve().parents[3] / "actors" / "web" / "static" / "vendor"


def test_every_vendored_file_matches_its_recorded_sha384_and_keeps_its_licence() -> None:
    record = json.loads((VENDOR / "vendor.json").read_text())
    named = set()
    for name, package in record["packages"].items():
        assert package["license"] == "MIT", name
        licence = (VENDOR / package["licenseFile"]).read_text()
        assert "Permission is hereby granted, free of charge" in licence and "xterm.js authors" in licence
        for file, entry in package["files"].items():
            digest = hashlib.sha384((VENDOR / file).read_bytes()).digest()
            assert entry["integrity"] == "sha384-" + base64.b64encode(digest).decode(), file
            named.add(file)
    assert named == {"xterm.js", "xterm.css", "addon-fit.js"}
    assert record["packages"]["@xterm/xterm"]["version"] == "6.0.0"
    assert record["packages"]["@xterm/addon-fit"]["version"] == "0.11.0"


def test_the_page_loads_only_vendored_files_with_their_integrity() -> None:
    page = (VENDOR.parent / "index.html").read_text()
    for file in ("xterm.js", "xterm.css", "addon-fit.js"):
        assert f'/static/vendor/{file}" integrity="@SRI:{file}@"' in page
    assert "http://" not in page and "https://" not in page  # nothing from elsewhere
