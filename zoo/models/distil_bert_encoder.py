"""The DistilBERT-style student encoder."""

import keras

from zoo.models.bert_encoder import BertEncoder


@keras.saving.register_keras_serializable(package="zoo")
class DistilBertEncoder(BertEncoder):
    """BERT without segment embeddings and without a pooler (DistilBERT).

    It takes the same three inputs as `BertEncoder` so exporters, the
    tokenizer and the Android app see one interface; `segment_ids` is
    accepted and ignored. Outputs a dict with `sequence_output` only.
    Takes `BertEncoder`'s arguments; `num_segments` is accepted and ignored
    (the family fixes it at 0, `zoo.configs.FAMILY_DEFAULTS["distilbert"]`)
    and `get_config()` leaves it out.
    """

    _family = "distilbert"
    _ignored_arguments = ("num_segments",)
