"""A log-linear histogram of microsecond values (HDR-style): exact below ``2 * SUB`` µs and
``SUB`` buckets per power of two above, so a quantile it reports is within ``RELATIVE_ERROR``
(3.1 %) of the true one -- fine enough that a verdict against a threshold is not decided by a
bucket edge. The switch records its hidden delays in it, the host agents their loop lateness,
the simulator and the experiments' guard their quantiles: one bucket layout, so their
histograms merge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

SUB_BITS = 4
SUB = 1 << SUB_BITS
"""Sub-buckets per power of two (above the exact range)."""
MAX_US = (1 << 32) - 1
"""Largest value kept apart (71 min); larger ones are counted in the last bucket."""
RELATIVE_ERROR = 1 / (2 * SUB)
"""Bound on |reported − true| / true of a quantile: a bucket [low, high] above the exact
range is at most low / SUB wide and the report is its midpoint."""


def bucket_of(us: int) -> int:
    """The bucket index of a value in µs: the value itself below 2·SUB, else SUB per octave."""
    v = min(max(us, 0), MAX_US)
    if v < 2 * SUB:
        return v
    shift = v.bit_length() - SUB_BITS - 1
    return shift * SUB + (v >> shift)


BUCKETS = bucket_of(MAX_US) + 1


def bucket_range(i: int) -> tuple[int, int]:
    """(lowest, highest) µs value bucket ``i`` holds."""
    if i < 2 * SUB:
        return i, i
    shift = i // SUB - 1
    mantissa = i - shift * SUB
    return mantissa << shift, ((mantissa + 1) << shift) - 1


@dataclass
class LogHistogram:
    """Microsecond values in log-linear buckets: an add is a few integer operations on the
    packet path; quantiles within ``RELATIVE_ERROR``. Shipped sparse (:meth:`sparse`);
    :meth:`of` reads that or the dense ``counts`` list."""

    counts: list[int] = field(default_factory=lambda: [0] * BUCKETS)

    def __post_init__(self) -> None:
        if len(self.counts) != BUCKETS:
            dense = [0] * BUCKETS
            for i, c in enumerate(self.counts[:BUCKETS]):
                dense[i] = c
            self.counts = dense

    @classmethod
    def of(cls, data: LogHistogram | Iterable[int] | Mapping[str | int, int] | None
           ) -> LogHistogram:
        h = cls()
        if data is not None:
            h.merge(data)
        return h

    def add(self, us: int) -> None:
        self.counts[bucket_of(us)] += 1

    def add_many(self, values: Iterable[int]) -> None:
        counts = self.counts
        for us in values:
            counts[bucket_of(us)] += 1

    @property
    def n(self) -> int:
        return sum(self.counts)

    def merge(self, other: LogHistogram | Iterable[int] | Mapping[str | int, int]) -> None:
        """Add another histogram's counts: a LogHistogram, its dense list or its sparse map."""
        if isinstance(other, LogHistogram):
            other = other.counts
        if isinstance(other, Mapping):
            for i, c in other.items():
                self.counts[min(int(i), BUCKETS - 1)] += int(c)
            return
        for i, c in enumerate(other):
            self.counts[min(i, BUCKETS - 1)] += c

    def minus(self, earlier: LogHistogram) -> LogHistogram:
        """What was added since ``earlier`` (a snapshot of the same histogram)."""
        return LogHistogram([max(0, a - b) for a, b in zip(self.counts, earlier.counts,
                                                           strict=True)])

    def sparse(self) -> dict[str, int]:
        """{bucket index: count} of the non-empty buckets (JSON keys are strings)."""
        return {str(i): c for i, c in enumerate(self.counts) if c}

    def quantile(self, q: float) -> float:
        """The q-quantile (nearest rank) in µs: the midpoint of the bucket that holds it, within
        ``RELATIVE_ERROR`` of the true value (exact below 2·SUB µs); 0 when empty."""
        n = self.n
        if not n:
            return 0.0
        rank = max(1, -(-int(q * n * 1_000_000) // 1_000_000))   # ceil(q·n), float-safe
        seen = 0
        for i, c in enumerate(self.counts):
            seen += c
            if c and seen >= rank:
                low, high = bucket_range(i)
                return (low + high) / 2
        raise AssertionError("unreachable: rank <= n")
