"""Hostile-input properties of the hook request parser and the event tables (hypothesis)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from actors.hooks.agent_events import KNOWN_AGENTS, decide
from actors.hooks.http_request import (
    MAX_JSON_DEPTH,
    HookSubmission,
    HttpRejection,
    admit,
    check_secret,
    exceeds_depth,
    parse_submission,
    route_agent,
)

HEADERS = {"x-orca-pane-key": "tab:3f1c2a9e-0000-4000-8000-000000000001"}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(st.binary(max_size=2048))
def test_any_body_yields_a_submission_or_a_4xx(body: bytes) -> None:
    """Arbitrary bytes never raise: the result is a submission or a 4xx rejection."""
    result = parse_submission("claude", HEADERS, body)
    assert isinstance(result, HookSubmission) or 400 <= result.status < 500


@given(json_values)
def test_json_objects_within_depth_are_accepted(value: object) -> None:
    """Any JSON object within the depth bound is accepted with its content intact."""
    body = json.dumps({"payload": value}).encode()
    result = parse_submission("claude", HEADERS, body)
    if exceeds_depth({"payload": value}, MAX_JSON_DEPTH):
        assert isinstance(result, HttpRejection)
    else:
        assert isinstance(result, HookSubmission) and result.payload == {"payload": value}


@given(st.integers(min_value=1, max_value=300))
def test_depth_bound_is_exact(depth: int) -> None:
    """Nesting up to MAX_JSON_DEPTH passes; one level more is refused with 400."""
    body = ('{"a":' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}").encode()
    result = parse_submission("claude", HEADERS, body)
    if depth <= MAX_JSON_DEPTH:
        assert isinstance(result, HookSubmission)
    else:
        assert isinstance(result, HttpRejection) and result.reason == "json_too_deep"


@given(
    st.sampled_from(KNOWN_AGENTS), st.dictionaries(st.text(max_size=20), json_values, max_size=6)
)
def test_decide_never_raises(agent: str, payload: dict[str, object]) -> None:
    """Any payload maps to a known action or to no change."""
    decision = decide(agent, payload)
    assert decision.action in (None, "working", "blocked", "waiting", "done", "clear")
    assert len(decision.detail) <= 200


def test_routes_and_secret() -> None:
    """Only POST /hook/<known agent> routes; the secret compare is exact."""
    assert route_agent("POST", "/hook/claude?x=1") == "claude"
    assert isinstance(route_agent("POST", "/hook/../claude"), HttpRejection)
    assert isinstance(route_agent("PUT", "/hook/codex"), HttpRejection)
    assert check_secret({"x-orca-hook-secret": "abc"}, "abc") is None
    refused = check_secret({"x-orca-hook-secret": "abcd"}, "abc")
    assert refused is not None and refused.status == 403


def test_raw_launch_token_is_not_kept() -> None:
    """The submission carries the token's SHA-256 only (seed 02 §10)."""
    result = parse_submission("claude", {**HEADERS, "x-orca-launch-token": "raw-token"}, b"{}")
    assert isinstance(result, HookSubmission)
    assert "raw-token" not in repr(result)
    assert result.launch_token_sha256 is not None and len(result.launch_token_sha256) == 64


def test_admit_answers_route_then_secret_then_body() -> None:
    """The first failing step answers: an unknown route before a bad secret before a bad
    body; all three passing, the submission."""
    secret = "s" * 32
    good = {**HEADERS, "x-orca-hook-secret": secret}
    body = json.dumps({"hook_event_name": "Stop"}).encode()
    assert admit(route_agent, "POST", "/nope", {}, b"[", secret) == HttpRejection(404, "unknown_route")
    assert admit(route_agent, "POST", "/hook/claude", HEADERS, b"[", secret) == HttpRejection(
        403, "bad_secret"
    )
    rejected = admit(route_agent, "POST", "/hook/claude", good, b"[", secret)
    assert isinstance(rejected, HttpRejection) and rejected.status == 400
    admitted = admit(route_agent, "POST", "/hook/claude", good, body, secret)
    assert isinstance(admitted, HookSubmission) and admitted.agent == "claude"
