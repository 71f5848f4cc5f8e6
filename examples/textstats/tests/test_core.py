from textstats import mean_word_length, top_words, word_count


def test_word_count_ignores_punctuation():
    assert word_count("Hello, world! Hello again.") == 4


def test_word_count_empty():
    assert word_count("") == 0


def test_mean_word_length_is_exact():
    assert mean_word_length("ab abc") == 2.5


def test_mean_word_length_empty():
    assert mean_word_length("") == 0.0


def test_top_words_returns_n():
    assert top_words("a b a c b a", 2) == [("a", 3), ("b", 2)]
