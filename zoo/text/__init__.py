"""Text side of the zoo: tokenizers, packer, normalization, masking,
pre-training pairs, readers of every `--data` form and features.

    from zoo.text.tokenizer import WordPieceTokenizer     # BertTokenizerFast's ids, in TF ops
    from zoo.text.readers import read_task_examples

The repository's own corpora and the data sets built from them are in
`zoo.datasets`. Submodules are imported directly (nothing is re-exported
here).
"""
