"""Encoders, the task heads built on them, and the names they share."""

from zoo.configs import DEFAULT_SEQUENCE_LENGTH, INPUT_NAMES
from zoo.models.albert_encoder import AlbertEncoder
from zoo.models.bert_encoder import (
    ENCODER_CLASSES,
    BertEncoder,
    build_encoder,
    padding_mean,
)
from zoo.models.classifier import Classifier
from zoo.models.distil_bert_encoder import DistilBertEncoder
from zoo.models.encoder_task import dtype_policy_scope, with_dtype_policy
from zoo.models.input_contract import (
    InvalidInputError,
    check_ids,
    contract_for,
    ids_assertions,
    input_contract,
)
from zoo.models.masked_lm import MaskedLM, MaskedLMHead
from zoo.models.pretrainer import NextSentencePredictor, Pretrainer
from zoo.models.question_answerer import QuestionAnswerer
from zoo.models.regressor import Regressor
from zoo.models.roberta_encoder import RobertaEncoder
from zoo.models.sentence_embedding import (
    cosine,
    embed_texts,
    pair_cosines,
    sentence_embedding,
)
from zoo.models.task import (
    ID_LEVEL_CLASS,
    TASK_MODELS,
    TASKS,
    NotATaskModelError,
    check_task,
    task_of,
)
from zoo.models.token_classifier import TokenClassifier

__all__ = [
    "DEFAULT_SEQUENCE_LENGTH",
    "ENCODER_CLASSES",
    "ID_LEVEL_CLASS",
    "INPUT_NAMES",
    "TASKS",
    "TASK_MODELS",
    "AlbertEncoder",
    "BertEncoder",
    "Classifier",
    "DistilBertEncoder",
    "InvalidInputError",
    "MaskedLM",
    "MaskedLMHead",
    "NextSentencePredictor",
    "NotATaskModelError",
    "Pretrainer",
    "QuestionAnswerer",
    "Regressor",
    "RobertaEncoder",
    "TokenClassifier",
    "build_encoder",
    "check_ids",
    "check_task",
    "contract_for",
    "cosine",
    "dtype_policy_scope",
    "embed_texts",
    "ids_assertions",
    "input_contract",
    "pair_cosines",
    "padding_mean",
    "sentence_embedding",
    "task_of",
    "with_dtype_policy",
]
