"""Per-peer bounds of the gateway (pure): a token bucket and an in-flight count per key.

A hostile or buggy peer can only ever cost the gateway one small record (its key's
counters; the table of them is bounded by the authorized keys) and a bounded number of
concurrent relays. Everything beyond is answered ``unavailable`` at once, never queued.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# A mirror long-polls one at a time and re-snapshots in bursts of four; a remote attach
# asks once per round trip while output flows or keys are typed (its next termWait and
# its next write): a key repeat or a fast-printing program over a 1-3 ms link is several
# hundred requests a second, and at 100/s its keys were refused. The bound is there to
# cap what one peer can make the gateway do, never to throttle one interactive client.
RATE_PER_S = 2000.0
BURST = 4000.0
# Concurrent requests of one key: long-polls occupy one each; attach loops a couple.
MAX_INFLIGHT_PER_PEER = 16
# ... and of every peer together (each is a trio task plus a reply buffer).
MAX_INFLIGHT_TOTAL = 256
# Keys we keep counters for (a key must be authorized first, so this is generous).
MAX_PEERS = 1024


@dataclass
class PeerBudget:
    tokens: float = BURST
    stamp: float = 0.0
    inflight: int = 0
    requests: int = 0
    refused: int = 0

    def admit(self, now: float, rate: float = RATE_PER_S, burst: float = BURST) -> bool:
        """Take one token if there is one (refills at ``rate`` per second up to ``burst``)."""
        self.tokens = min(burst, self.tokens + (now - self.stamp) * rate)
        self.stamp = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


@dataclass
class Budgets:
    rate: float = RATE_PER_S
    burst: float = BURST
    max_inflight_per_peer: int = MAX_INFLIGHT_PER_PEER
    max_inflight_total: int = MAX_INFLIGHT_TOTAL
    peers: dict[bytes, PeerBudget] = field(default_factory=dict)
    inflight_total: int = 0

    def peer(self, key: bytes, now: float) -> PeerBudget:
        budget = self.peers.get(key)
        if budget is None:
            if len(self.peers) >= MAX_PEERS:  # forget idle peers first
                for old in [k for k, b in self.peers.items() if b.inflight == 0]:
                    del self.peers[old]
            budget = self.peers[key] = PeerBudget(tokens=self.burst, stamp=now)
        return budget

    def try_start(self, key: bytes, now: float) -> str | None:
        """None if a request of ``key`` may run now (and count it), else why not."""
        budget = self.peer(key, now)
        budget.requests += 1
        reason = None
        if budget.inflight >= self.max_inflight_per_peer:
            reason = f"too many requests in flight ({self.max_inflight_per_peer})"
        elif self.inflight_total >= self.max_inflight_total:
            reason = "gateway busy"
        elif not budget.admit(now, self.rate, self.burst):
            reason = f"rate limit ({self.rate:g} requests/s)"
        if reason is not None:
            budget.refused += 1
            return reason
        budget.inflight += 1
        self.inflight_total += 1
        return None

    def finish(self, key: bytes) -> None:
        budget = self.peers.get(key)
        if budget is not None and budget.inflight > 0:
            budget.inflight -= 1
        self.inflight_total = max(0, self.inflight_total - 1)
