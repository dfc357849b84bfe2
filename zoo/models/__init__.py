"""Encoders and the task heads built on them."""

from zoo.models.bert_encoder import BertEncoder
from zoo.models.classifier import Classifier
from zoo.models.distil_bert_encoder import DistilBertEncoder
from zoo.models.masked_lm import MaskedLM, MaskedLMHead
from zoo.models.pretrainer import NextSentencePredictor, Pretrainer
from zoo.models.question_answerer import QuestionAnswerer
from zoo.models.task import with_dtype_policy
from zoo.models.token_classifier import TokenClassifier

__all__ = [
    "BertEncoder",
    "Classifier",
    "DistilBertEncoder",
    "MaskedLM",
    "MaskedLMHead",
    "NextSentencePredictor",
    "Pretrainer",
    "QuestionAnswerer",
    "TokenClassifier",
    "with_dtype_policy",
]
