"""A seeded sample of cases that run the very same code path, for a test that loops over them.

The seed is TSE_TEST_SEED when set (a number: the sample a failure named, replayed), else random; with
TSE_TEST_SEED=all every case runs.  A test names the seed in its assertion messages (``said``)."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def sample(cases: Sequence[T], count: int, name: str) -> tuple[list[T], str]:
    """*count* of *cases* (in their order), drawn with the seed for the test *name*; all of them under
    TSE_TEST_SEED=all.  (the cases, what to say of the seed in an assertion message)"""
    given = os.environ.get("TSE_TEST_SEED", "")
    if given == "all":
        return list(cases), "TSE_TEST_SEED=all"
    seed = int(given) if given else random.randrange(2**32)
    chosen = set(random.Random(f"{seed}:{name}").sample(range(len(cases)), min(count, len(cases))))
    return [case for number, case in enumerate(cases) if number in chosen], f"TSE_TEST_SEED={seed}"
