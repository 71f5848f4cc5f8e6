"""Small text statistics: the bundled example project (it has bugs on purpose)."""

from textstats.core import mean_word_length, top_words, word_count

__all__ = ["mean_word_length", "top_words", "word_count"]
