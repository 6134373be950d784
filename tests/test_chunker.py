"""The recursive chunker: examples, argument checks and seeded property loops."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import pytest

from kbdesk.ingest.chunker import DEFAULT_SEPARATORS, Chunk, chunk_sections, estimate_tokens, split_text

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def prose(rng: random.Random, paragraphs: int, max_word: int = 8) -> str:
    """Paragraphs of 1-4 sentences of 3-9 short words: each paragraph under 400 characters."""
    out = []
    for _ in range(paragraphs):
        sentences = []
        for _ in range(rng.randint(1, 4)):
            words = [rng.choice(WORDS)[:max_word] for _ in range(rng.randint(3, 9))]
            sentences.append(" ".join(words).capitalize() + rng.choice([".", ".", "?", "!"]))
        out.append(" ".join(sentences))
    return "\n\n".join(out)


def random_text(rng: random.Random, length: int) -> str:
    """Words of many sizes (some unbreakable and long), separators and odd whitespace."""
    pieces = []
    total = 0
    while total < length:
        roll = rng.random()
        if roll < 0.55:
            piece = "".join(rng.choice("abcdefghijé漢字") for _ in range(rng.randint(1, 12)))
        elif roll < 0.9:
            piece = rng.choice([" ", " ", " ", "\n", "\n\n", ". ", "? ", "! ", "。", "\t", "   ", "\n\n\n"])
        else:
            piece = rng.choice("xyz") * rng.randint(20, 400)
        pieces.append(piece)
        total += len(piece)
    return "".join(pieces)


def overlap(a: Chunk, b: Chunk) -> int:
    return max(0, a.metadata["end"] - b.metadata["start"])


def check_invariants(text: str, chunks: list[Chunk], size: int, ov: int) -> None:
    """Everything split_text promises for any text and any valid size/overlap."""
    assert [c.index for c in chunks] == list(range(len(chunks)))
    covered = [0] * (len(text) + 1)
    for c in chunks:
        start, end = c.metadata["start"], c.metadata["end"]
        assert c.content == text[start:end]
        assert c.content and c.content == c.content.strip()
        assert len(c.content) <= size  # hard cuts: not even a long word exceeds
        assert c.token_count == estimate_tokens(c.content)
        covered[start] += 1
        covered[end] -= 1
    depth = 0
    for i, ch in enumerate(text):
        depth += covered[i]
        assert depth > 0 or ch.isspace(), f"character {i} ({ch!r}) is in no chunk"
    for a, b in pairwise(chunks):
        assert b.metadata["start"] > a.metadata["start"]
        assert b.metadata["end"] > a.metadata["end"]
        assert overlap(a, b) <= ov


# ------------------------------------------------------------------------ arguments


@pytest.mark.parametrize(
    ("size", "ov", "message"),
    [
        (0, 0, "chunk_size must be at least 1"),
        (-5, 0, "chunk_size must be at least 1"),
        (100, -1, "chunk_overlap must be at least 0"),
        (100, 100, "smaller than chunk_size (100)"),
        (100, 150, "smaller than chunk_size (100)"),
        (100.0, 10, "chunk_size must be an integer"),
        (100, "10", "chunk_overlap must be an integer"),
        (True, 0, "chunk_size must be an integer"),
    ],
)
def test_bad_sizes_raise_value_error(size, ov, message):
    with pytest.raises(ValueError) as err:
        split_text("some text", size, ov)
    assert message in str(err.value)
    with pytest.raises(ValueError):
        chunk_sections([], size, ov)  # checked even with nothing to chunk


def test_separators_must_be_strings():
    with pytest.raises(ValueError, match="not a single string"):
        split_text("a b", 10, 0, separators=" ")
    with pytest.raises(ValueError, match="must all be strings"):
        not_all_strings: list[Any] = [" ", None]
        split_text("a b", 10, 0, separators=not_all_strings)


def test_empty_separator_is_ignored():
    text = "word " * 50
    with_empty = split_text(text, 40, 10, separators=["\n\n", " ", ""])
    assert with_empty == split_text(text, 40, 10, separators=["\n\n", " "])


def test_defaults():
    assert DEFAULT_SEPARATORS[:2] == ("\n\n", "\n") and DEFAULT_SEPARATORS[-1] == " "
    assert ". " in DEFAULT_SEPARATORS
    text = "x " * 2000
    assert split_text(text) == split_text(text, 1000, 200)


# ------------------------------------------------------------------------- examples


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t \n"])
def test_blank_text_gives_no_chunks(text):
    assert split_text(text) == []


def test_short_text_is_one_stripped_chunk():
    text = "\n  Hello world.  \n"
    (chunk,) = split_text(text)
    assert chunk == Chunk("Hello world.", 0, estimate_tokens("Hello world."), {"start": 3, "end": 15})


def test_paragraph_boundaries_are_preferred():
    paragraphs = [f"Paragraph {i} " + "word " * 70 + "end." for i in range(6)]  # ~370 chars each
    text = "\n\n".join(paragraphs)
    chunks = split_text(text, 1000, 200)
    check_invariants(text, chunks, 1000, 200)
    # two paragraphs fit, a third does not: every chunk ends where a paragraph ends
    for c in chunks:
        assert c.content.endswith("end.")
    assert chunks[0].content == "\n\n".join(paragraphs[:2])


def test_long_paragraph_splits_at_sentences():
    sentence = "This sentence has exactly some words in it. "
    text = (sentence * 60).strip()
    chunks = split_text(text, 300, 50)
    check_invariants(text, chunks, 300, 50)
    assert len(chunks) > 5
    assert all(c.content.endswith(".") for c in chunks)


def test_overlap_prefers_a_sentence_start():
    sentence = "Every sentence here has ten words in it, all. "  # 46 characters
    text = (sentence * 40).strip()
    chunks = split_text(text, 500, 120)
    check_invariants(text, chunks, 500, 120)
    for a, b in pairwise(chunks):
        assert b.content.startswith("Every sentence")  # not some word inside a sentence
        assert 46 < overlap(a, b) <= 120


def test_questions_and_exclamations_are_sentences():
    text = ("Is this a question about words? " * 20 + "Yes it is! " * 20).strip()
    chunks = split_text(text, 200, 0)
    check_invariants(text, chunks, 200, 0)
    assert all(c.content[-1] in "?!" for c in chunks)


def test_cjk_splits_at_full_stop():
    text = "这是一个关于知识库的句子。" * 100  # 13 characters per sentence, no spaces
    chunks = split_text(text, 100, 20)
    check_invariants(text, chunks, 100, 20)
    assert all(c.content.endswith("。") for c in chunks)
    assert all(c.token_count == len(c.content) for c in chunks)
    # sentences longer than the overlap: the overlap falls back to whole characters
    text = "这是一个关于知识库和文档检索以及向量搜索的很长的句子。" * 40
    chunks = split_text(text, 100, 20)
    check_invariants(text, chunks, 100, 20)
    assert all(0 < overlap(a, b) <= 20 for a, b in pairwise(chunks))


def test_unbreakable_word_is_cut_hard_at_chunk_size():
    word = "".join(random.Random(1).choice("abcdef") for _ in range(2500))
    text = f"intro text {word} outro text"
    chunks = split_text(text, 1000, 200)
    check_invariants(text, chunks, 1000, 200)
    assert chunks[0].content.startswith("intro text " + word[:100])  # no tiny "intro text" chunk
    assert [len(c.content) for c in chunks] == [1000, 1000, 922]
    # inside the word, consecutive chunks still share context: exactly the overlap
    assert [overlap(a, b) for a, b in pairwise(chunks)] == [200, 200]


@pytest.mark.parametrize("ov", [0, 200])
def test_long_word_that_fits_starts_the_next_chunk(ov):
    word = "y" * 700
    text = "w " * 200 + word + " tail"  # the second half of the first window is all word
    chunks = split_text(text, 1000, ov)
    check_invariants(text, chunks, 1000, ov)
    assert chunks[0].content == ("w " * 200).strip()
    assert word in chunks[1].content


def test_long_word_that_cannot_fit_after_the_overlap_is_cut_at_once():
    text = "w " * 200 + "y" * 900 + " tail"  # 900 + 200 overlap > 1000: it will be cut anyway
    chunks = split_text(text, 1000, 200)
    check_invariants(text, chunks, 1000, 200)
    assert len(chunks[0].content) == 1000  # no pointless short chunk before it
    assert next(c.content for c in split_text(text, 1000, 0)) == ("w " * 200).strip()  # fits without overlap


def test_overlap_zero_means_disjoint_chunks():
    text = prose(random.Random(3), 40)
    chunks = split_text(text, 300, 0)
    check_invariants(text, chunks, 300, 0)
    assert all(overlap(a, b) == 0 for a, b in pairwise(chunks))


def test_chunk_size_one_works():
    text = "ab c\nd"
    chunks = split_text(text, 1, 0)
    assert [c.content for c in chunks] == ["a", "b", "c", "d"]
    check_invariants(text, chunks, 1, 0)


def test_result_does_not_depend_on_text_outside_the_document():
    text = prose(random.Random(4), 30)
    assert split_text(text, 250, 50) == split_text(text + "\n\n", 250, 50)


# --------------------------------------------------------------------------- tokens


def reference_tokens(text: str) -> int:
    """estimate_tokens's documented formula, computed the slow, obvious way."""
    if not text.strip():
        return 0
    wide = sum(len(ch.encode("utf-8", "surrogatepass")) >= 3 for ch in text)
    narrow = len(text) - wide
    if not narrow:
        return wide
    return max(1, round(wide + max(narrow / 4, len(text.split()) * 4 / 3)))


def test_estimate_tokens():
    assert estimate_tokens("") == 0
    assert estimate_tokens(" \n\t\u3000") == 0
    assert estimate_tokens("a") == 1
    english = "The quick brown fox jumps over the lazy dog. " * 20  # 900 chars, 180 words
    assert estimate_tokens(english) == 240  # words * 4/3 beats chars / 4 here
    prose_like = "Alterations of the architecture of cerebral white matter in the developing brain. " * 10
    assert estimate_tokens(prose_like) == round(len(prose_like) / 4)  # chars / 4 beats words here
    digits = "3.14159265358979323846" * 10  # no spaces: the character rule
    assert estimate_tokens(digits) == round(len(digits) / 4)
    cjk = "知识库是一个很有用的工具。" * 10
    assert estimate_tokens(cjk) == len(cjk)  # one token per CJK character
    assert estimate_tokens("我们用 Python 写代码") == 6 + 4  # 6 wide + 3 words * 4/3
    accented = "Ünïcödé ßtraße – résumé"
    assert estimate_tokens(accented) == reference_tokens(accented)
    assert estimate_tokens("bad \udc80 byte") == 1 + 4  # a lone surrogate is wide; 3 words * 4/3


def test_text_with_lone_surrogates_chunks():
    text = ("caf\udce9 au lait. " * 100).strip()  # what errors="surrogateescape" decoding leaves
    check_invariants(text, split_text(text, 100, 20), 100, 20)


def test_estimate_tokens_matches_its_formula():
    """The fast path (skipping the word count) never changes the result."""
    rng = random.Random(17)
    alphabet = "abcdefghij   \n\t.,é–\u00a0\u2003\u3000漢字かな한😀\x1c\x85\udc80"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        if rng.random() < 0.5:
            text = "".join(rng.choice("abcdefgh ") for _ in range(rng.randint(0, 300)))
        assert estimate_tokens(text) == reference_tokens(text), repr(text)


# ------------------------------------------------------------------------- sections


@dataclass
class Section:
    text: str
    metadata: dict = field(default_factory=dict)


def test_sections_carry_metadata_and_never_straddle():
    rng = random.Random(5)
    sections = [Section(prose(rng, 8), {"page": p, "headings": ["Intro", f"Part {p}"]}) for p in range(1, 4)]
    sections.insert(1, Section("   ", {"page": 99}))  # a blank page yields nothing
    chunks = chunk_sections(sections, 200, 40)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    pages = [c.metadata["page"] for c in chunks]
    assert pages == sorted(pages) and set(pages) == {1, 2, 3}
    whole = "\n\n".join(s.text for s in sections)  # offsets are into the document's whole text
    for c in chunks:
        assert c.content == whole[c.metadata["start"] : c.metadata["end"]]
        assert c.metadata["headings"] == ["Intro", f"Part {c.metadata['page']}"]
    # per-section chunking is exactly split_text on that section
    first = [c for c in chunks if c.metadata["page"] == 1]
    assert [c.content for c in first] == [c.content for c in split_text(sections[0].text, 200, 40)]


def test_section_metadata_is_copied_not_shared():
    section = Section("one two three " * 40, {"headings": ["A"], "start": -1})
    chunks = chunk_sections([section], 100, 10)
    assert len(chunks) > 1
    chunks[0].metadata["headings"].append("changed")
    assert chunks[1].metadata["headings"] == ["A"]
    assert section.metadata == {"headings": ["A"], "start": -1}
    assert chunks[0].metadata["start"] == 0  # offsets win over a section's own keys


def test_sections_without_metadata():
    class Bare:
        text = "hello there"
        metadata = None

    (chunk,) = chunk_sections([Bare()])
    assert chunk.metadata == {"start": 0, "end": 11}


# ------------------------------------------------------------------------ properties


def test_random_texts_keep_every_promise():
    rng = random.Random(20240601)
    for _ in range(400):
        text = random_text(rng, rng.randint(0, 3000))
        size = rng.choice([1, 2, 5, 17, 50, 120, 300, 1000])
        ov = rng.randint(0, size - 1)
        chunks = split_text(text, size, ov)
        check_invariants(text, chunks, size, ov)


def test_random_texts_with_custom_separators():
    rng = random.Random(7)
    for _ in range(100):
        text = random_text(rng, rng.randint(100, 2000))
        seps = rng.sample(["\n\n", "\n", ". ", " ", "。", "ab", "\n\n\n\n\n"], rng.randint(0, 4))
        size = rng.randint(1, 200)
        ov = rng.randint(0, size - 1)
        check_invariants(text, split_text(text, size, ov, separators=seps), size, ov)


def test_prose_chunks_overlap_at_word_boundaries():
    """Long text with separators: every pair overlaps, by at most chunk_overlap, at a word start."""
    rng = random.Random(11)
    for _ in range(150):
        text = prose(rng, rng.randint(5, 60))
        ov = rng.randint(30, 150)
        size = rng.randint(2 * ov + 50, 1500)  # so a chunk is longer than its overlap
        chunks = split_text(text, size, ov)
        check_invariants(text, chunks, size, ov)
        if len(text) > size:
            assert len(chunks) >= 2
        for a, b in pairwise(chunks):
            shared = overlap(a, b)
            assert 0 < shared <= ov
            assert text[b.metadata["start"] - 1].isspace()  # begins at a separator boundary
            assert shared >= ov // 2 - 1  # the boundary leaves at least half the overlap


def test_chunks_are_well_filled():
    """A chunk ends in the second half of its window whenever a separator is there."""
    rng = random.Random(13)
    for _ in range(50):
        text = prose(rng, 40)
        size = rng.randint(100, 1200)
        chunks = split_text(text, size, size // 5)
        for c in chunks[:-1]:
            assert len(c.content) >= size // 2 - 2  # the window less stripped whitespace


# ------------------------------------------------------------------ merged sections


def whole_text(sections: list[Section]) -> str:
    return "\n\n".join(s.text for s in sections)


def test_small_sections_merge_up_to_the_chunk_size():
    sections = [
        Section(f"## Part {i}\n\n" + "word " * 30 + "end.", {"headings": ["Guide", f"Part {i}"]}) for i in range(7)
    ]  # 165 characters each: six fill 1000 exactly, the seventh starts a new chunk
    chunks = chunk_sections(sections, 1000, 200, merge=True)
    whole = whole_text(sections)
    assert len(chunks) == 2
    first, second = chunks
    assert first.content == whole_text(sections[:6]) and len(first.content) == 1000
    assert second.content == sections[6].text
    assert first.content == whole[first.metadata["start"] : first.metadata["end"]]
    assert first.metadata["headings"] == ["Guide", "Part 0"]  # where the chunk begins
    assert [s["headings"] for s in first.metadata["sections"]] == [["Guide", f"Part {i}"] for i in range(6)]
    for piece, section in zip(first.metadata["sections"], sections[:6], strict=True):  # the 6 it holds
        assert whole[piece["start"] : piece["end"]] == section.text  # each piece's own place
    assert "sections" not in second.metadata  # one section: its metadata as before
    assert second.metadata == {"headings": ["Guide", "Part 6"], "start": whole.index("## Part 6"), "end": len(whole)}


def test_by_default_every_section_is_chunked_alone():
    sections = [Section(f"Note {i}.", {"headings": [f"H{i}"]}) for i in range(4)]
    assert [c.content for c in chunk_sections(sections, 1000, 200)] == [s.text for s in sections]
    assert chunk_sections(sections, 1000, 200) == chunk_sections(sections, 1000, 200, merge=False)
    (merged,) = chunk_sections(sections, 1000, 200, merge=True)
    assert merged.content == "Note 0.\n\nNote 1.\n\nNote 2.\n\nNote 3."


def test_long_sections_are_not_merged_with_their_neighbours():
    rng = random.Random(3)
    long_one = Section(prose(rng, 12), {"headings": ["Long"]})
    sections = [
        Section("Short intro.", {"headings": ["Intro"]}),
        long_one,
        Section("Short end.", {"headings": ["End"]}),
    ]
    chunks = chunk_sections(sections, 300, 50, merge=True)
    whole = whole_text(sections)
    assert chunks[0].content == "Short intro." and chunks[-1].content == "Short end."
    assert [c.content for c in chunks[1:-1]] == [c.content for c in split_text(long_one.text, 300, 50)]
    assert all(c.metadata["headings"] == ["Long"] and "sections" not in c.metadata for c in chunks[1:-1])
    for c in chunks:
        assert c.content == whole[c.metadata["start"] : c.metadata["end"]]


def test_pages_and_other_metadata_never_merge():
    pages = [Section(f"Page {n} text.", {"page": n}) for n in range(1, 4)]
    assert [c.metadata["page"] for c in chunk_sections(pages, merge=True)] == [1, 2, 3]
    titled = [
        Section("One.", {"headings": ["A"], "title": "T"}),
        Section("Two.", {"headings": ["B"], "title": "T"}),
        Section("Three.", {"headings": ["C"], "title": "U"}),
    ]
    chunks = chunk_sections(titled, merge=True)
    assert [c.content for c in chunks] == ["One.\n\nTwo.", "Three."]
    assert chunks[0].metadata["title"] == "T" and chunks[1].metadata["title"] == "U"


def test_blank_sections_inside_a_merge():
    sections = [
        Section("  ", {"headings": ["Empty"]}),
        Section(" First. ", {"headings": ["A"]}),
        Section("\n", {"headings": ["Blank"]}),
        Section("Second.", {"headings": ["B"]}),
        Section("   ", {"headings": ["Tail"]}),
    ]
    (chunk,) = chunk_sections(sections, 100, 10, merge=True)
    whole = whole_text(sections)
    assert chunk.content == whole[chunk.metadata["start"] : chunk.metadata["end"]] == "First. \n\n\n\n\nSecond."
    assert chunk.metadata["headings"] == ["A"]
    assert [s["headings"] for s in chunk.metadata["sections"]] == [["A"], ["B"]]
    blanks_only = chunk_sections([Section("  ", {}), Section("\n", {})], merge=True)
    assert blanks_only == []
    (alone,) = chunk_sections([Section(" ", {"headings": ["x"]}), Section(" Only. ", {"headings": ["y"]})], merge=True)
    assert alone.content == "Only." and "sections" not in alone.metadata and alone.metadata["headings"] == ["y"]


def test_random_sections_keep_offsets_sizes_and_coverage():
    """Any mix of sections: every chunk is its slice of the whole text, none is over the
    size, every non-blank character is in a chunk, and pieces lie inside their chunk."""
    rng = random.Random(17)
    for _ in range(200):
        sections = []
        for _ in range(rng.randint(0, 12)):
            text = random_text(rng, rng.choice([0, 5, 40, 150, 600, 2500]))
            metas: list[dict[str, Any]] = [
                {"headings": [rng.choice("ABC")]},
                {"headings": []},
                {"page": rng.randint(1, 2)},
            ]
            meta = rng.choice(metas)
            sections.append(Section(text, meta))
        size = rng.choice([50, 200, 1000])
        ov = rng.randint(0, size // 3)
        chunks = chunk_sections(sections, size, ov, merge=True)
        whole = whole_text(sections)
        assert [c.index for c in chunks] == list(range(len(chunks)))
        covered = [0] * (len(whole) + 1)
        for c in chunks:
            start, end = c.metadata["start"], c.metadata["end"]
            assert c.content == whole[start:end] and c.content == c.content.strip() and 0 < len(c.content) <= size
            covered[start] += 1
            covered[end] -= 1
            for piece in c.metadata.get("sections", []):
                assert start <= piece["start"] < piece["end"] <= end
        depth = 0
        for i, ch in enumerate(whole):
            depth += covered[i]
            assert depth > 0 or ch.isspace()
        # merging never gives more chunks than chunking every section alone
        assert len(chunks) <= len(chunk_sections(sections, size, ov))
