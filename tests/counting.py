"""How many generated cases the property tests ran, printed at the end of the run.

Property tests call `count(label)` once per generated case; `conftest.py` prints
the totals in the terminal summary so a CI log shows how much was tried.
`examples(share)` scales the loaded hypothesis profile's `max_examples` for tests
whose cases cost more than most.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import settings

COUNTS: Counter[str] = Counter()


def count(label: str, n: int = 1) -> None:
    COUNTS[label] += n


def examples(share: float = 1.0) -> int:
    return max(10, round(settings.default.max_examples * share))
