"""De-duplication and the project's fixed split (zoo.datasets.splits)."""

from zoo.datasets.splits import deduplicate, split_examples


def test_dedup_and_fixed_split():
    items = [f"t{i % 37}" for i in range(50)]
    unique = deduplicate(items)
    assert unique == [f"t{i}" for i in range(37)]
    split = split_examples(list(range(100)))
    assert len(split["test"]) == 20 and len(split["validation"]) == 10
    assert len(split["train"]) == 70
    assert split["test"][:3] == [0, 5, 10] and split["validation"][:2] == [1, 11]


def test_repeats_counts_what_deduplicate_drops_and_what_disagrees():
    from zoo.datasets.splits import repeats

    pairs = [("a", 1), ("b", 1), ("a", 1), ("a", 2), ("b", 3), ("c", 1)]
    first = lambda p: p[0]  # noqa: E731
    assert repeats(pairs, first, lambda p: p[1]) == (3, 2)
    assert len(deduplicate(pairs, key=first)) == len(pairs) - 3
    assert repeats([], first, lambda p: p[1]) == (0, 0)
