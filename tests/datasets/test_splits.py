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
