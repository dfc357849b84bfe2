"""Text side of the zoo: tokenizer, packer, normalization and dataset readers.

    from zoo.text.tokenizer import WordPieceTokenizer     # BertTokenizerFast's ids, in TF ops
    from zoo.text.corpora import bbc_news_split, minilm_checkpoint_dir

Submodules are imported directly (nothing is re-exported here), so reading
a corpus does not import TensorFlow.
"""
