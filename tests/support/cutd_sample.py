"""A seeded random sample of cases that run the same code path (helper module of the cutD round).

TSE_TEST_SEED=N replays the sample of seed N; TSE_TEST_SEED=all runs every case; unset, a new seed
each run.  The seed is in ``Sample.said``, for the assertion messages: a failure names its replay.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Sample:
    chosen: list
    said: str  # "TSE_TEST_SEED=... (k of n)": how to run this very sample again


def seeded_sample(cases: list[T], count: int, *, always: tuple[int, ...] = ()) -> Sample:
    """*count* of *cases* (in their order) picked at random, with the cases at the indices *always*
    besides; every case with TSE_TEST_SEED=all."""
    cases = list(cases)
    seed = os.environ.get("TSE_TEST_SEED") or str(random.SystemRandom().randrange(10**9))
    if seed == "all":
        return Sample(cases, f"TSE_TEST_SEED=all ({len(cases)} of {len(cases)})")
    fixed = {index % len(cases) for index in always}
    rest = [index for index in range(len(cases)) if index not in fixed]
    picked = fixed | set(random.Random(seed).sample(rest, min(count, len(rest))))
    chosen = [case for index, case in enumerate(cases) if index in picked]
    return Sample(chosen, f"TSE_TEST_SEED={seed} ({len(chosen)} of {len(cases)})")
