"""A seeded random sample of the instants (or cases) a loop runs the very same code path at: each run
of the suite tries some, another run others.  The seed is TSE_TEST_SEED's if set (a whole number, or
``all`` for every one), else a random one; every assertion message names it, so that a failure can be
replayed with ``TSE_TEST_SEED=N``."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def seeded_sample(items: Sequence[T], count: int) -> tuple[list[T], str]:
    """*count* of *items* (all when TSE_TEST_SEED=all or there are no more), in their order, and the
    words that say how to replay the choice (``TSE_TEST_SEED=N``), for the assertion messages."""
    given = os.environ.get("TSE_TEST_SEED", "").strip()
    if given == "all" or count >= len(items):
        return list(items), "TSE_TEST_SEED=all"
    seed = int(given) if given else random.SystemRandom().randrange(10**6)
    chosen = sorted(random.Random(seed).sample(range(len(items)), count))
    return [items[i] for i in chosen], f"TSE_TEST_SEED={seed}"


def run_seed() -> tuple[int | None, str]:
    """This run's seed for a test that draws its own sample (None with TSE_TEST_SEED=all: every case),
    and the words that replay it, for the assertion messages."""
    given = os.environ.get("TSE_TEST_SEED", "").strip()
    if given == "all":
        return None, "TSE_TEST_SEED=all"
    seed = int(given) if given else random.SystemRandom().randrange(10**6)
    return seed, f"TSE_TEST_SEED={seed}"
