"""The words of the kept texts narrow the plain-text match to the texts that may hold the query,
and never leave out one that does, through any run of edits (a stale word index would)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from memapp.stores.kept_texts import KeptTexts

_texts = st.text(alphabet="abé_ \n#.-Σ", min_size=3, max_size=30)
# A run of edits: each a store's files as (path, text); a path's stamp changes with its text.
_edits = st.lists(st.dictionaries(st.sampled_from("pqrstuvw"), _texts), min_size=1, max_size=6)
_needles = st.lists(st.text(alphabet="abé_ #.Σ", min_size=1, max_size=5), max_size=8)


def _key(files: dict[str, str]) -> tuple[tuple[str, int, int], ...]:
    return tuple((path, hash(text), len(text)) for path, text in sorted(files.items()))


@given(_edits, _needles)
def test_the_words_never_leave_out_a_text_holding_the_query(edits, needles):
    kept = KeptTexts()
    for files in edits:
        key = _key(files)
        texts = dict(zip(key, sorted(files.items()), strict=True))
        followed = kept.follow(key, {stamp: text for stamp, (_, text) in texts.items()})
        assert followed == tuple(text for _, text in sorted(files.items()))
        assert kept.view == (key, followed)
        in_order = kept.view[1]
        for needle in needles:
            holding = [i for i, text in enumerate(in_order) if needle in text]
            found = kept.candidates(key, needle, len(key))
            if found is not None:
                assert found == sorted(set(found))
                assert set(holding) <= set(found)  # none left out
                run = max(re.findall(r"\w+", needle), key=len)
                assert all(run in in_order[i] for i in found)  # none gone or changed since


def test_the_words_narrow_to_the_texts_holding_them():
    kept = KeptTexts()
    key = (("a.md", 1, 1), ("b.md", 1, 1), ("c.md", 1, 1))
    kept.follow(
        key, dict(zip(key, ["see the wiki", "deploy friday", "the deployment"], strict=True))
    )
    assert kept.candidates(key, "eploy", 3) == [1, 2]
    assert kept.candidates(key, "ee the wi", 3) == [0, 2]  # by its longest run, "the"
    assert kept.candidates(key, "eploy", 1) is None  # more than asked for: read them all
    assert kept.candidates(key, " #", 3) is None  # no word to narrow by
    later = (("a.md", 2, 1), *key[1:])
    assert kept.candidates(later, "eploy", 3) is None  # follows another key
    kept.follow(later, {later[0]: "deploy the wiki"})  # a.md edited: it holds "eploy" now
    assert kept.candidates(later, "eploy", 3) == [0, 1, 2]
    left = later[:2]
    kept.follow(left, {})  # c.md gone
    assert kept.candidates(left, "deployment", 3) == []
    assert kept.follow(key, {}) is None  # a text it does not have: nothing changed
    assert kept.view[0] is left


def test_many_texts_gone_at_once_leave_their_words():
    """A pull changes many files at once: their words are filtered in one pass, not one by one."""
    kept = KeptTexts()
    key = tuple((f"{n}.md", 1, 1) for n in range(100))
    kept.follow(key, {stamp: f"note {n} about the deploy" for n, stamp in enumerate(key)})
    later = tuple((path, 2 if n % 2 else 1, 1) for n, (path, _, _) in enumerate(key))
    kept.follow(later, {stamp: "now about the release" for stamp in later[1::2]})  # 50 edited
    assert kept.candidates(later, "deplo", 100) == list(range(0, 100, 2))
    assert kept.candidates(later, "eleas", 100) == list(range(1, 100, 2))
