"""The RoBERTa encoder (Liu et al. 2019) as a Keras functional model."""

import keras

from zoo.configs import ROBERTA_PADDING_IDX
from zoo.layers.roberta_embeddings import RobertaEmbeddings
from zoo.models.bert_encoder import BertEncoder


@keras.saving.register_keras_serializable(package="zoo")
class RobertaEncoder(BertEncoder):
    """RoBERTa: BERT's post-LN blocks and tanh pooler over `RobertaEmbeddings`.

    What differs from `BertEncoder` is the input side: byte-level BPE ids
    (`zoo.text.byte_pair_tokenizer.BytePairTokenizer`, `<pad>` = 1), one
    segment type, and positions that start after the padding id, computed
    from `padding_mask`. The weights have BERT's names (HF `RobertaModel`
    uses BertModel's keys), so checkpoints map through the same table.
    Takes `BertEncoder`'s arguments, with RoBERTa's defaults
    (`zoo.configs.FAMILY_DEFAULTS["roberta"]`: one segment type, LayerNorm
    eps 1e-5).

    Same call contract as `BertEncoder`: inputs `token_ids`, `segment_ids`
    (all 0), `padding_mask`; outputs `sequence_output` and `pooled_output`.

    Example:
        >>> encoder = zoo.BertEncoder.from_preset("roberta_base")  # a RobertaEncoder
        >>> encoder.count_params()
        124645632
    """

    _family = "roberta"

    def _create_embeddings(self, config, dtype):
        super()._create_embeddings(
            config, dtype, layer=RobertaEmbeddings, padding_idx=ROBERTA_PADDING_IDX
        )

    def _embed(self, inputs):
        return self.embeddings(
            inputs["token_ids"], inputs["segment_ids"], padding_mask=inputs["padding_mask"]
        )
