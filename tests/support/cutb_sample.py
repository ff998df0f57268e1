"""A seeded random sample of the cases of a loop whose cases all run the same code path: the seed from
TSE_TEST_SEED if set (TSE_TEST_SEED=all: every case), else drawn; a failing case's message names the seed
(``TSE_TEST_SEED=... pytest ...`` replays it)."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def sample(cases: Sequence[T], k: int) -> tuple[str, list[T]]:
    """(the seed as TSE_TEST_SEED takes it, *k* of *cases* drawn with it, in their order); every case when
    TSE_TEST_SEED is ``all`` or there are no more than *k*."""
    given = os.environ.get("TSE_TEST_SEED")
    if given == "all" or len(cases) <= k:
        return "all", list(cases)
    seed = given if given is not None else str(random.SystemRandom().randrange(2**32))
    chosen = sorted(random.Random(seed).sample(range(len(cases)), k))
    return seed, [cases[i] for i in chosen]
