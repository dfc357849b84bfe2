"""A real, graded STS-style data set built from WordNet: pairs of noun
definitions scored 0..5 by how close their synsets sit in WordNet's noun
hierarchy.

    splits = wordnet_sts_splits()                 # {"train": [...], ...}, seeded
    write_wordnet_sts("data/wordnet_sts")         # train/validation/test.jsonl
    zoo finetune --data data/wordnet_sts --task regress ...   # or --data wordnet-sts

No STS benchmark installs offline (docs/data.md); WordNet does (Debian
`wordnet-base`). Each example is `{"text", "text_b", "score", "synsets"}`:
the definitions (the gloss before its quoted examples) of two noun synsets
and their Wu-Palmer similarity times 5, computed here from the `@`/`@i`
(hypernym, instance hypernym) pointers of `data.noun`, no nltk:

    wup(a, b) = max over common ancestors c of
                2 depth(c) / (dist(a, c) + dist(b, c) + 2 depth(c))

with `dist` the fewest hypernym steps from a synset up to `c` and
`depth(c)` 1 + the fewest steps from `c` up to the root (`entity`, depth
1). Identical synsets score 5; two synsets whose only common ancestor is
`entity` score 5 * 2 / (da + db + 2), close to 0 for deep ones.

How pairs are drawn (`random.Random(seed)`), so the scores spread over the
scale rather than piling up near the low end as random pairs would: from a
synset `a`, walk up 1-6 random hypernym steps and down 0-6 random hyponym
steps (`~`/`~i`) to `b` (80% of pairs), or take `b` at random (20%). The
synsets are split first (a seeded permutation: i%5==0 test, i%10==1
validation, the rest train) and both ends of a pair come from its split's
synsets, so no test definition is ever seen in training.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import pathlib
import random

from zoo.datasets.corpora import wordnet_dir
from zoo.utils.atomic import atomic_file

SPLIT_SIZES = {"train": 2000, "validation": 300, "test": 500}
SEED = 0
MAX_SCORE = 5.0
MIN_DEFINITION_WORDS = 4
RANDOM_PAIR_FRACTION = 0.2
MAX_UP, MAX_DOWN = 6, 6


@dataclasses.dataclass(frozen=True)
class NounSynset:
    offset: int
    words: tuple
    hypernyms: tuple  # offsets, `@` and `@i` pointers
    hyponyms: tuple  # offsets, `~` and `~i` pointers
    definition: str


def _definition(gloss):
    # A gloss is the definition, then `; "example"` quotes.
    return gloss.split('; "', 1)[0].strip().rstrip(";").strip()


@functools.lru_cache(maxsize=1)
def wordnet_noun_taxonomy():
    """`{offset: NounSynset}` of WordNet's 82,115 noun synsets, read from
    `data.noun` (the lexicographer line format of wndb(5WN))."""
    taxonomy = {}
    with open(wordnet_dir() / "data.noun", encoding="utf-8") as f:
        for line in f:
            if line.startswith(" "):  # the licence header
                continue
            head, _, gloss = line.partition(" | ")
            fields = head.split()
            offset, count = int(fields[0]), int(fields[3], 16)
            words = tuple(fields[4 + 2 * i].replace("_", " ") for i in range(count))
            at = 4 + 2 * count
            pointers = int(fields[at])
            up, down = [], []
            for i in range(pointers):
                symbol, target, pos = fields[at + 1 + 4 * i : at + 4 + 4 * i]
                if pos != "n":
                    continue
                if symbol in ("@", "@i"):
                    up.append(int(target))
                elif symbol in ("~", "~i"):
                    down.append(int(target))
            taxonomy[offset] = NounSynset(
                offset, words, tuple(up), tuple(down), _definition(gloss)
            )
    return taxonomy


def _ancestor_distances(taxonomy, offset):
    """`{ancestor: fewest hypernym steps}` from `offset`, itself included at 0."""
    distances = {offset: 0}
    queue = collections.deque([offset])
    while queue:
        node = queue.popleft()
        for parent in taxonomy[node].hypernyms:
            if parent not in distances:
                distances[parent] = distances[node] + 1
                queue.append(parent)
    return distances


class WuPalmer:
    """Wu-Palmer similarity (0..1] over a noun taxonomy, with cached depths."""

    def __init__(self, taxonomy=None):
        self.taxonomy = wordnet_noun_taxonomy() if taxonomy is None else taxonomy
        self._ancestors = {}
        self._depth = {}

    def ancestors(self, offset):
        if offset not in self._ancestors:
            self._ancestors[offset] = _ancestor_distances(self.taxonomy, offset)
        return self._ancestors[offset]

    def depth(self, offset):
        """1 + the fewest hypernym steps to a root (a synset without hypernyms)."""
        if offset not in self._depth:
            self._depth[offset] = 1 + min(
                d
                for node, d in self.ancestors(offset).items()
                if not self.taxonomy[node].hypernyms
            )
        return self._depth[offset]

    def __call__(self, a, b):
        ancestors_a, ancestors_b = self.ancestors(a), self.ancestors(b)
        best = 0.0
        for common in ancestors_a.keys() & ancestors_b.keys():
            depth = self.depth(common)
            best = max(
                best, 2 * depth / (ancestors_a[common] + ancestors_b[common] + 2 * depth)
            )
        return best


def _synset_splits(offsets, seed):
    order = list(offsets)
    random.Random(seed).shuffle(order)
    pools = {"train": [], "validation": [], "test": []}
    for i, offset in enumerate(order):
        pools["test" if i % 5 == 0 else "validation" if i % 10 == 1 else "train"].append(
            offset
        )
    return pools


def _walk(taxonomy, start, rng):
    node = start
    for _ in range(rng.randint(1, MAX_UP)):
        parents = taxonomy[node].hypernyms
        if not parents:
            break
        node = rng.choice(parents)
    for _ in range(rng.randint(0, MAX_DOWN)):
        children = taxonomy[node].hyponyms
        if not children:
            break
        node = rng.choice(children)
    return node


def wordnet_sts_splits(sizes=None, seed=SEED):
    """`{"train", "validation", "test"}` lists of STS-style examples (dicts
    with `text`, `text_b`, `score` in 0..5 rounded to 3 decimals, and
    `synsets`, the two offsets), the same for the same `sizes` and `seed`.
    Within a split no pair repeats (in either order)."""
    sizes = dict(SPLIT_SIZES if sizes is None else sizes)
    taxonomy = wordnet_noun_taxonomy()
    similarity = WuPalmer(taxonomy)
    usable = sorted(
        o for o, s in taxonomy.items() if len(s.definition.split()) >= MIN_DEFINITION_WORDS
    )
    pools = _synset_splits(usable, seed)
    rng = random.Random(seed + 1)
    splits = {}
    for name in ("train", "validation", "test"):
        pool = pools[name]
        members = set(pool)
        examples, seen = [], set()
        while len(examples) < sizes.get(name, 0):
            # The kind of pair is drawn once per example and kept through the
            # retries: a walk's end lands outside a small split's synsets more
            # often, and re-drawing the kind would then tilt the small splits
            # toward random (low-scored) pairs.
            walk = rng.random() >= RANDOM_PAIR_FRACTION
            while True:
                a = rng.choice(pool)
                b = _walk(taxonomy, a, rng) if walk else rng.choice(pool)
                key = (min(a, b), max(a, b))
                if b != a and b in members and key not in seen:
                    break
            seen.add(key)
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            examples.append(
                {
                    "text": taxonomy[first].definition,
                    "text_b": taxonomy[second].definition,
                    "score": round(MAX_SCORE * similarity(first, second), 3),
                    "synsets": [first, second],
                }
            )
        splits[name] = examples
    return splits


def write_wordnet_sts(out_dir, sizes=None, seed=SEED):
    """Write `wordnet_sts_splits(sizes, seed)` as `OUT/train.jsonl`,
    `validation.jsonl` and `test.jsonl` (each file atomically); returns the
    directory, which `--data` takes as a split folder."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, examples in wordnet_sts_splits(sizes, seed).items():
        with atomic_file(out / f"{name}.jsonl", "w") as f:
            for example in examples:
                f.write(json.dumps(example, ensure_ascii=False) + "\n")
    return out
