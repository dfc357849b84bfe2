"""`bench/head_tail.py`'s cut: an article's first words within HEAD word
pieces and its last within TAIL, whole words only, in order."""

from bench.head_tail import cut_text
from zoo.text.tokenizer import WordPieceTokenizer

TOKENIZER = WordPieceTokenizer(
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e", "##x", "##y"]
)


def pieces(text):
    return len(TOKENIZER.tokenize([text]).to_list()[0])


def test_a_text_that_fits_stays_whole():
    text = "a bx c  d"
    assert cut_text(text, TOKENIZER, 3, 2) == text  # 5 pieces, spacing kept
    assert cut_text("", TOKENIZER, 3, 2) == ""


def test_head_and_tail_keep_whole_words_within_their_budgets():
    words = "a bx cxy d e axy b c dx e".split()  # 1 2 3 1 1 3 1 1 2 1 pieces
    text = " ".join(words)
    cut = cut_text(text, TOKENIZER, 4, 3)
    # Head: a (1) + bx (2) = 3; cxy (3) would pass 4. Tail: e (1) + dx (2) = 3.
    assert cut == "a bx dx e"
    assert pieces(cut) <= 4 + 3
    # A word that would cross the head's budget is left out, not split.
    assert cut_text(text, TOKENIZER, 2, 0) == "a"
    # Only the words between head and tail go, and the order stays.
    assert cut_text(text, TOKENIZER, 12, 3) == "a bx cxy d e axy b dx e"
