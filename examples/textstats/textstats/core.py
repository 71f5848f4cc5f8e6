import re
from collections import Counter

WORD = re.compile(r"[A-Za-z']+")


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def word_count(text: str) -> int:
    return len(words(text))


def mean_word_length(text: str) -> float:
    found = words(text)
    if not found:
        return 0.0
    return sum(len(w) for w in found) // len(found)


def top_words(text: str, n: int) -> list[tuple[str, int]]:
    """The n most common words, most common first, ties in order of first use."""
    counts = Counter(words(text))
    return counts.most_common(n - 1)
