"""A seeded random sample of the cases a loop runs the very same code path at (kill instants, byte
offsets, amounts of room): each run of the suite tries some, another run others.

The seed is TSE_TEST_SEED's if set (a whole number: the sample a failure named, replayed; ``all``:
every case), else a new one each run.  Every assertion message names it (``said``)."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import Any, NamedTuple

EVERY = "all"


class Sample(NamedTuple):
    chosen: list[Any]  # in the cases' order
    said: str  # "TSE_TEST_SEED=N (k of n)": how to run this very sample again


def run_seed() -> tuple[int | None, str]:
    """This run's seed, for a test that draws its own sample (None with TSE_TEST_SEED=all: every
    case), and the words that replay it, for the assertion messages."""
    given = os.environ.get("TSE_TEST_SEED", "").strip()
    if given == EVERY:
        return None, f"TSE_TEST_SEED={EVERY}"
    seed = int(given) if given else random.SystemRandom().randrange(10**6)
    return seed, f"TSE_TEST_SEED={seed}"


def seeded_sample(cases: Sequence[Any], count: int, *, always: tuple[int, ...] = ()) -> Sample:
    """*count* of *cases* drawn with this run's seed, and the cases at the indices *always* besides
    (negative ones from the end); every case with TSE_TEST_SEED=all."""
    cases = list(cases)
    seed, said = run_seed()
    if seed is None or not cases:
        return Sample(cases, f"{said} ({len(cases)} of {len(cases)})")
    fixed = {index % len(cases) for index in always}
    rest = [index for index in range(len(cases)) if index not in fixed]
    picked = fixed | set(random.Random(seed).sample(rest, min(count, len(rest))))
    chosen = [case for index, case in enumerate(cases) if index in picked]
    return Sample(chosen, f"{said} ({len(chosen)} of {len(cases)})")
