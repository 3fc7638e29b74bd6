"""The texts a store's search keeps beside its index, and the words they hold (docs/design.md
§24): the plain-text match (the query as typed, part of a word) tests only the texts holding a
word that holds the query's longest run of word characters, not every text of the store (at
20,000 files, reading every text was most of a narrow search).

The word index only narrows: every text it names is still tested with the real substring test,
so it finds what reading every text finds. It is changed in step with the texts, under its own
lock: a text's words are taken out when the text goes and put in when it comes.
"""

from __future__ import annotations

import re
import threading
from array import array
from collections.abc import Mapping

Stamp = tuple[str, int, int]  # (path, mtime_ms, size): a file's text is known by it

_WORD = re.compile(r"\w+")  # a text holding the query holds each run of these inside a word
_FEW = 32  # texts gone at once that are taken out one by one


class KeptTexts:
    """One store's texts in the order of the index they follow (``view``), and for each word the
    slots of the texts holding it (a slot is a text's place while it is kept, reused after)."""

    __slots__ = (
        "_free",
        "_lock",
        "_new_words",
        "_slots",
        "_texts",
        "_vocabulary",
        "_where",
        "_words",
        "view",
    )

    def __init__(self) -> None:
        self.view: tuple[tuple[Stamp, ...], tuple[str, ...]] = ((), ())  # key, texts in order
        self._slots: dict[Stamp, int] = {}
        self._texts: list[str] = []  # by slot, "" when free
        self._free: list[int] = []
        self._where = array("i")  # slot -> position in `key`
        self._words: dict[str, array] = {}  # word -> slots of the texts holding it
        self._vocabulary = ""  # the words joined by line breaks
        self._new_words = False  # since the vocabulary was joined
        self._lock = threading.Lock()

    def text(self, stamp: Stamp) -> str | None:
        with self._lock:
            slot = self._slots.get(stamp)
            return self._texts[slot] if slot is not None else None

    def missing(self, key: tuple[Stamp, ...]) -> list[Stamp]:
        """The stamps of `key` whose text is not kept."""
        with self._lock:
            return [stamp for stamp in key if stamp not in self._slots]

    def follow(self, key: tuple[Stamp, ...], new: Mapping[Stamp, str]) -> tuple[str, ...] | None:
        """Keep exactly the texts of `key`'s stamps, and return them in its order: those kept
        stay, those gone are taken out, the others come from `new`. None, and nothing changed,
        when `new` lacks one of those."""
        with self._lock:
            if any(stamp not in self._slots and stamp not in new for stamp in key):
                return None
            wanted = set(key)
            gone = {self._slots.pop(s) for s in [s for s in self._slots if s not in wanted]}
            if len(gone) <= _FEW:  # each taken out of its words' slots (a search in C)
                for slot in gone:
                    for word in set(_WORD.findall(self._texts[slot])):
                        self._words[word].remove(slot)
            else:  # many (a pull): each of their words' slots filtered once
                words = set().union(*(_WORD.findall(self._texts[slot]) for slot in gone))
                for word in words:
                    self._words[word] = array("i", [s for s in self._words[word] if s not in gone])
            for slot in gone:
                self._texts[slot] = ""
                self._free.append(slot)
            for stamp in key:
                if stamp in self._slots:
                    continue
                slot = self._free.pop() if self._free else len(self._texts)
                if slot == len(self._texts):
                    self._texts.append("")
                self._slots[stamp] = slot
                self._texts[slot] = text = new[stamp]
                for word in set(_WORD.findall(text)):
                    slots = self._words.get(word)
                    if slots is None:
                        self._words[word] = slots = array("i")
                        self._new_words = True
                    slots.append(slot)
            where = array("i", [-1]) * len(self._texts)
            for position, stamp in enumerate(key):
                where[self._slots[stamp]] = position
            self._where = where
            self.view = key, tuple(self._texts[self._slots[stamp]] for stamp in key)
            return self.view[1]

    def candidates(self, key: tuple[Stamp, ...], needle: str, most: int) -> list[int] | None:
        """The positions in `key`, in order, of the texts that may hold `needle` (lower-cased):
        those holding a word that holds its longest run of word characters. None when that
        narrows nothing (no such run) or to more than `most` texts, or when the texts follow
        another key than `key` now."""
        runs = _WORD.findall(needle)
        if not runs:
            return None
        run = max(runs, key=len)
        found: set[int] = set()
        with self._lock:
            if self.view[0] is not key:
                return None
            if self._new_words:  # joined again, without the words no text holds any more
                self._words = {word: slots for word, slots in self._words.items() if slots}
                self._vocabulary, self._new_words = "\n".join(self._words), False
            vocabulary = self._vocabulary
            at, total = vocabulary.find(run), 0
            while at != -1:
                start = vocabulary.rfind("\n", 0, at) + 1
                end = vocabulary.find("\n", at)
                end = len(vocabulary) if end == -1 else end
                slots = self._words[vocabulary[start:end]]
                total += len(slots)
                if total > most:
                    return None
                found.update(slots)
                at = vocabulary.find(run, end)
            where = self._where
            return sorted(where[slot] for slot in found)
