"""What tokens cost: the price table (shipped as data, overridable) and the arithmetic. Pure
apart from :func:`load_prices`.

The table is ``config/vault-prices.toml`` with ``<config dir>/vault-prices.toml`` on
top (a model there replaces the shipped entry whole; ``[rules]`` keys one by one). A
bad user entry is reported (``errors``, shown by ``orca vault status``) and skipped,
never fatal: the shipped price of that model stays.

Rules (Anthropic's prompt-caching prices, platform.claude.com "Prompt caching"): an
entry without explicit cache prices gets ``[rules]`` multiples of its input price -
5-minute writes 1.25x, 1-hour writes 2x, cache reads 0.1x. A request whose prompt is
above an entry's ``long_prompt.above`` pays that tier's rates for all its tokens.

Money is summed in ``Decimal`` (prices are decimal fractions of a dollar per million
tokens; binary floats would make hand-checked totals differ in the last digit) and
handed out as a float rounded to nine decimals (a thousandth of a micro-dollar).

A model no table names has no price: :meth:`PriceTable.lookup` returns None and the
reports say "unpriced" - never $0, which would read as "free".
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from orca.config_files import ConfigFileError, read_toml, shipped_path

log = logging.getLogger(__name__)

PRICES_NAME = "vault-prices.toml"
SHIPPED_PRICES = shipped_path(PRICES_NAME)
MILLION = Decimal(1_000_000)
DEFAULT_RULES = {
    "cache_write_5m": Decimal("1.25"),
    "cache_write_1h": Decimal(2),
    "cache_read": Decimal("0.1"),
}
_RATE_KEYS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")

# Spellings of one model across providers: Bedrock (``us.anthropic.claude-…-v1:0``),
# Vertex (``claude-…@20250929``), gateways (``anthropic/claude-…``), Gemini's API
# (``models/gemini-…``), dated snapshots (``-20251101``, ``-2025-08-07``), variants
# (``[1m]``), ``-latest`` aliases.
_PREFIX = re.compile(r"^(?:(?:us|eu|apac|global)\.)?(?:anthropic[./]|openai/|google/|models/)")
_SUFFIXES = re.compile(r"(?:\[[^\]]*\]|@[\w.-]+|-v\d+:\d+|-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")


def normalize_model(name: str) -> str:
    """The table key a model's name is priced under (see the module docstring)."""
    key = _PREFIX.sub("", name.strip().lower())
    while True:
        shorter = _SUFFIXES.sub("", key)
        if shorter == key:
            return key
        key = shorter


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens."""

    input: Decimal
    output: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal
    cache_read: Decimal


@dataclass(frozen=True, slots=True)
class ModelPrice:
    rates: Rates
    long_above: int | None = None
    long_rates: Rates | None = None

    def rates_for(self, prompt_tokens_above_threshold: bool) -> Rates:
        if prompt_tokens_above_threshold and self.long_rates is not None:
            return self.long_rates
        return self.rates


@dataclass(frozen=True, slots=True)
class TokenSums:
    input: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0
    output: int = 0


def cost(rates: Rates, tokens: TokenSums) -> Decimal:
    return (
        tokens.input * rates.input
        + tokens.cache_write_5m * rates.cache_write_5m
        + tokens.cache_write_1h * rates.cache_write_1h
        + tokens.cache_read * rates.cache_read
        + tokens.output * rates.output
    ) / MILLION


def dollars(amount: Decimal) -> float:
    return float(round(amount, 9))


@dataclass(frozen=True)
class PriceTable:
    models: dict[str, ModelPrice]
    source: str = ""
    read: str = ""
    errors: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    def lookup(self, model: str) -> ModelPrice | None:
        return self.models.get(normalize_model(model)) if model else None

    def thresholds(self) -> list[int]:
        """Every long-prompt threshold, ascending (the query buckets requests by them)."""
        return sorted({p.long_above for p in self.models.values() if p.long_above is not None})


@dataclass
class _Builder:
    rules: dict[str, Decimal] = field(default_factory=lambda: dict(DEFAULT_RULES))
    raw: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return Decimal(str(value))


def _rates(entry: dict[str, Any], rules: dict[str, Decimal]) -> Rates | str:
    given: dict[str, Decimal] = {}
    for key in _RATE_KEYS:
        if key in entry:
            number = _number(entry[key])
            if number is None:
                return f"{key} must be a number >= 0"
            given[key] = number
    if "input" not in given or "output" not in given:
        return "input and output prices are required"
    base = given["input"]
    return Rates(
        input=base,
        output=given["output"],
        cache_write_5m=given.get("cache_write_5m", base * rules["cache_write_5m"]),
        cache_write_1h=given.get("cache_write_1h", base * rules["cache_write_1h"]),
        cache_read=given.get("cache_read", base * rules["cache_read"]),
    )


def _model(name: str, entry: Any, rules: dict[str, Decimal]) -> ModelPrice | str:
    if not isinstance(entry, dict):
        return "must be a table"
    rates = _rates(entry, rules)
    if isinstance(rates, str):
        return rates
    tier = entry.get("long_prompt")
    if tier is None:
        return ModelPrice(rates)
    if not isinstance(tier, dict):
        return "long_prompt must be a table"
    above = tier.get("above")
    if isinstance(above, bool) or not isinstance(above, int) or above <= 0:
        return "long_prompt.above must be a positive integer"
    long_rates = _rates(tier, rules)
    if isinstance(long_rates, str):
        return f"long_prompt: {long_rates}"
    return ModelPrice(rates, above, long_rates)


def _read(path: Path, builder: _Builder, *, required: bool) -> bool:
    try:
        doc = read_toml(path, on_error="raise", missing_ok=False)
    except ConfigFileError as exc:
        if not isinstance(exc.cause, FileNotFoundError):
            builder.errors.append(f"{path}: not read ({exc.cause})")
        elif required:
            builder.errors.append(f"{path}: missing")
        return False
    meta = doc.get("meta")
    if isinstance(meta, dict):
        builder.meta.update({k: str(v) for k, v in meta.items() if k in ("source", "read")})
    rules = doc.get("rules", {})
    if isinstance(rules, dict):
        for key, value in rules.items():
            number = _number(value)
            if key not in DEFAULT_RULES or number is None:
                builder.errors.append(f"{path}: [rules] {key} ignored")
            else:
                builder.rules[key] = number
    models = doc.get("models", {})
    if not isinstance(models, dict):
        builder.errors.append(f"{path}: [models] must be a table")
        return True
    for name, entry in models.items():
        builder.raw[normalize_model(name)] = (entry, f"{path}: model {name!r}")
    return True


def load_prices(config_dir: Path | None, shipped: Path = SHIPPED_PRICES) -> PriceTable:
    """The shipped table with the user's on top (the module docstring)."""
    builder = _Builder()
    files = [str(shipped)] if _read(shipped, builder, required=True) else []
    shipped_entries = dict(builder.raw)
    if config_dir is not None:
        user = config_dir / PRICES_NAME
        if _read(user, builder, required=False):
            files.append(str(user))
    models: dict[str, ModelPrice] = {}
    for key, (entry, where) in builder.raw.items():
        price = _model(key, entry, builder.rules)
        if isinstance(price, str):
            builder.errors.append(f"{where}: {price}; ignored")
            fallback = shipped_entries.get(key)
            if fallback is not None and fallback[0] is not entry:
                kept = _model(key, fallback[0], builder.rules)
                if not isinstance(kept, str):
                    models[key] = kept
            continue
        models[key] = price
    for error in builder.errors:
        log.warning("vault prices: %s", error)
    return PriceTable(
        models,
        source=builder.meta.get("source", ""),
        read=builder.meta.get("read", ""),
        errors=tuple(builder.errors),
        files=tuple(files),
    )
