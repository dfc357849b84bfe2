"""The repository's own data: readers of the real third-party corpora that
`make setup` installs, the data sets built from them, and the split rule
every data set without its own split follows.

    from zoo.datasets.corpora import bbc_news_split, minilm_checkpoint_dir
    from zoo.datasets.wordnet_sts import wordnet_sts_splits
    from zoo.datasets.splits import deduplicate, split_examples

- `corpora`: BBC News (with the project's fixed split), WordNet glosses,
  Jane Austen's novels, and where the all-MiniLM-L6-v2 checkpoint is;
- `wordnet_sts`: the graded sentence-pair set built from WordNet (`--data
  wordnet-sts`);
- `splits`: de-duplication and the fixed i%5 / i%10 split.

The tokenizers and the readers of user files stay in `zoo.text`; its
readers name `bbc` and `wordnet-sts` through this package. Submodules are
imported directly (nothing is re-exported here).
"""
