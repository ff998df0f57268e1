"""Hostile page directories for the indexer's memory bounds: pages of random words, each distinct."""

from __future__ import annotations

import random
from pathlib import Path

from .pages import write_pages


def write_random_word_pages(directory: Path, count: int, words: int, *, seed: int = 9, letters: int = 9) -> Path:
    """*count* page files of *words* random words of *letters* lowercase letters each (seeded): nearly
    every word distinct, so that the pages' vocabulary for typo tolerance grows with every page."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    pages = {}
    for doc_id in range(1, count + 1):
        text = " ".join("".join(rng.choices(alphabet, k=letters)) for _ in range(words))
        pages[doc_id] = (f"http://h/{doc_id}", 0, f"<html><title>page {doc_id}</title><p>{text}</p></html>".encode())
    return write_pages(directory, pages)
