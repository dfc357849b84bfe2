"""Keras layers of the BERT family, one concept per file."""

from zoo.layers.attention import MultiHeadSelfAttention
from zoo.layers.embeddings import BertEmbeddings
from zoo.layers.projection import Projection
from zoo.layers.roberta_embeddings import RobertaEmbeddings
from zoo.layers.transformer_encoder import TransformerEncoderBlock

__all__ = [
    "BertEmbeddings",
    "MultiHeadSelfAttention",
    "Projection",
    "RobertaEmbeddings",
    "TransformerEncoderBlock",
]
