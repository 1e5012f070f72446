"""The price table: shipped data, user overrides, matching, the arithmetic (pricing.py)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from actors.vault.pricing import SHIPPED_PRICES, TokenSums, cost, load_prices, normalize_model


def test_model_names_are_matched_exactly_after_their_decorations() -> None:
    """Dated snapshots, Bedrock and Vertex spellings and variants name the table's model;
    a name the table lacks is never matched to a close one."""
    table = load_prices(None)
    assert normalize_model("claude-opus-4-5-20251101") == "claude-opus-4-5"
    assert normalize_model("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == "claude-sonnet-4-5"
    assert normalize_model("claude-sonnet-4-5@20250929") == "claude-sonnet-4-5"
    assert normalize_model("claude-opus-4-8[1m]") == "claude-opus-4-8"
    assert normalize_model("models/gemini-2.5-pro") == "gemini-2.5-pro"
    assert normalize_model("gpt-5-2025-08-07") == "gpt-5"
    assert table.lookup("claude-opus-4-5-20251101") is not None
    assert table.lookup("claude-opus-4-9") is None  # not claude-opus-4's price
    assert table.lookup("") is None
    assert table.errors == ()


def test_cache_prices_follow_the_rules_unless_an_entry_says_otherwise() -> None:
    """Sonnet 4.5 has no cache prices of its own: 1.25x / 2x / 0.1x of $3; Sonnet 5.5's
    cache read is its own $0.10."""
    table = load_prices(None)
    sonnet = table.lookup("claude-sonnet-4-5")
    assert sonnet is not None
    rates = sonnet.rates
    assert (rates.cache_write_5m, rates.cache_write_1h, rates.cache_read) == (
        Decimal("3.75"), Decimal("6.0"), Decimal("0.30"),
    )  # fmt: skip
    newer = table.lookup("claude-sonnet-5-5")
    assert newer is not None and newer.rates.cache_read == Decimal("0.10")
    # 1M input at $3 + 1M 5m-writes at $3.75 + 1M reads at $0.30 + 1M output at $15
    assert cost(rates, TokenSums(1_000_000, 1_000_000, 0, 1_000_000, 1_000_000)) == Decimal("22.05")


def test_a_user_table_overrides_one_model_and_a_bad_entry_is_reported(tmp_path: Path) -> None:
    (tmp_path / "vault-prices.toml").write_text(
        '[models."claude-opus-4-5"]\ninput = 1.0\noutput = 2.0\n'
        '[models."my-local-model"]\ninput = 0\noutput = 0\n'
        '[models."claude-haiku-4-5"]\ninput = "cheap"\noutput = 1\n'
    )
    table = load_prices(tmp_path)
    opus = table.lookup("claude-opus-4-5")
    assert opus is not None and (opus.rates.input, opus.rates.output) == (Decimal("1.0"), Decimal("2.0"))
    assert table.lookup("my-local-model") is not None  # priced, at $0, because the user said so
    haiku = table.lookup("claude-haiku-4-5")
    assert haiku is not None and haiku.rates.input == Decimal("1.0")  # the shipped price stays
    assert any("claude-haiku-4-5" in e and "input" in e for e in table.errors)
    assert table.files == (str(SHIPPED_PRICES), str(tmp_path / "vault-prices.toml"))
