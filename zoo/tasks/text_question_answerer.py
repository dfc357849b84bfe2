"""`TextQuestionAnswerer`: a `QuestionAnswerer` that takes raw (question, context)
pairs (zoo.tasks.text_task)."""

from __future__ import annotations

import keras
import numpy as np

from zoo.models import QuestionAnswerer
from zoo.tasks import decode
from zoo.tasks.text_task import (
    TextTaskMixin,
    as_list,
    as_text,
    as_texts,
    describe,
    is_ids,
    positive_int,
    refuse_non_text,
    require_examples,
    targets_name,
)
from zoo.text import features as feats
from zoo.text.preprocessor import TextPreprocessor, split_text_input
from zoo.text.readers import QAExample
from zoo.train import data as task_data
from zoo.train.finetune import evaluation_config

QA_FORMS = (
    "(question, context) pairs: a list of (question, context), a (questions, "
    "contexts) tuple, one (question, context) tuple of two str, or a list of dicts "
    "with 'question' and 'context'"
)


def _qa_pairs(x, where):
    """`(questions, contexts)` lists of what a question answerer takes
    (`QA_FORMS`); an empty list gives two empty lists."""
    refuse_non_text(x, where, QA_FORMS)
    if isinstance(x, np.ndarray) and x.ndim != 1:
        # Rows of (question, context) by accident of the array's width.
        raise TypeError(
            f"`{where}`: a numpy array of shape {x.shape}; give (question, context) "
            "pairs as a (questions, contexts) tuple, e.g. (array[:, 0], array[:, 1])."
        )
    if isinstance(x, (list, tuple)) and len(x) == 0:
        return [], []
    if isinstance(x, list) and isinstance(x[0], dict):
        questions, contexts = [], []
        for i, r in enumerate(x):
            if not (isinstance(r, dict) and "question" in r and "context" in r):
                raise ValueError(
                    f"{where}[{i}]: received {describe(r)}; each item of a list of dicts "
                    "needs 'question' and 'context'."
                )
            questions.append(as_text(r["question"], f"{where}[{i}]['question']"))
            contexts.append(as_text(r["context"], f"{where}[{i}]['context']"))
        return questions, contexts
    a, b = split_text_input(x)
    if b is None:
        raise ValueError(
            f"`{where}`: a question answerer takes {QA_FORMS}; received {describe(x)}."
        )
    a, b = as_texts(a, where), as_texts(b, f"{where} (contexts)")
    if len(a) != len(b):
        raise ValueError(f"{where}: {len(a)} questions but {len(b)} contexts.")
    return a, b


@keras.saving.register_keras_serializable(package="zoo")
class TextQuestionAnswerer(TextTaskMixin, QuestionAnswerer):
    """A `QuestionAnswerer` that takes raw (question, context) pairs.

    `fit(x, y)`: `x` pairs, `y` per pair the answer: a dict
    `{"text", "answer_start"}` (SQuAD's character offset), or the answer
    text (its first occurrence in the context), or "" / None when the
    context holds no answer. `predict(pairs)`: per pair
    `{"answer", "start", "end", "score"}` (character offsets into the
    context; `score` the span's probability), over the context's windows.
    """

    _id_class = QuestionAnswerer

    def __init__(
        self,
        encoder,
        preprocessor=None,
        doc_stride=128,
        max_answer_length=30,
        seed=0,
        **kwargs,
    ):
        doc_stride = positive_int(doc_stride, "doc_stride")
        max_answer_length = positive_int(max_answer_length, "max_answer_length")
        super().__init__(encoder, **kwargs)
        self.doc_stride = doc_stride
        self.max_answer_length = max_answer_length
        self._init_text(preprocessor, seed)

    @classmethod
    def from_checkpoint(
        cls,
        path,
        *,
        sequence_length=None,
        doc_stride=None,
        max_answer_length=None,
        seed=0,
        lowercase=None,
    ):
        """As `TextClassifier.from_checkpoint`, for span QA (default length 384)."""
        cls._check_settings(
            sequence_length, doc_stride=doc_stride, max_answer_length=max_answer_length
        )
        model, encoder, tokenizer, meta = cls._load(path, lowercase)
        if model is not None:
            if isinstance(model, cls):
                return cls._with_settings(
                    model,
                    sequence_length,
                    doc_stride=doc_stride,
                    max_answer_length=max_answer_length,
                    seed=seed or None,
                )
            config = evaluation_config(meta, sequence_length)
            text = cls(
                encoder,
                TextPreprocessor(tokenizer, config.sequence_length),
                doc_stride=doc_stride or config.doc_stride,
                max_answer_length=max_answer_length or config.max_answer_length,
                seed=seed,
            )
            return cls._adopt(model, text)
        length = sequence_length or min(384, encoder.max_sequence_length)
        return cls(
            encoder,
            TextPreprocessor(tokenizer, length),
            doc_stride=doc_stride or 128,
            max_answer_length=max_answer_length or 30,
            seed=seed,
        )

    def _task_config(self):
        return {
            **super()._task_config(),
            **self._text_config(),
            "doc_stride": self.doc_stride,
            "max_answer_length": self.max_answer_length,
        }

    def _model_dir_extra(self):
        return {
            **super()._model_dir_extra(),
            "finetune_config": {
                "doc_stride": self.doc_stride,
                "max_answer_length": self.max_answer_length,
                "sequence_length": self.sequence_length,
            },
        }

    _x_forms = QA_FORMS
    _needed_columns = ("question", "context")
    _optional_columns = ()
    _target_columns = ("answer",)
    _missing_target = {"missing_as": None}  # no answer in the context

    def _dataset(self, x, y, batch_size, *, shuffle=False, epoch_variable=None, where="x"):
        questions, contexts = _qa_pairs(x, where)
        answers = as_list(y, targets_name(where))
        if len(answers) != len(questions):
            raise ValueError(f"{where}: {len(questions)} pairs but {len(answers)} answers.")
        require_examples(len(questions), where)
        examples = []
        for i, (q, c, answer) in enumerate(zip(questions, contexts, answers)):
            if isinstance(answer, dict) and isinstance(answer.get("text"), bytes):
                answer = {**answer, "text": answer["text"].decode("utf-8")}
            if isinstance(answer, bytes):
                answer = answer.decode("utf-8")
            if (
                answer is None
                or answer == ""
                or (isinstance(answer, dict) and answer.get("text") in (None, ""))
            ):
                examples.append(QAExample(str(i), q, c, (), is_impossible=True))
                continue
            if isinstance(answer, dict):
                text, start = answer.get("text"), answer.get("answer_start")
            else:
                text, start = as_text(answer, f"y[{i}]"), None
            if not isinstance(text, str):
                raise TypeError(
                    f"y[{i}]: the answer's text is {describe(text)}; give a str."
                )
            if start is None:
                start = c.find(text)
            if not isinstance(start, (int, np.integer)) or isinstance(start, bool):
                raise TypeError(
                    f"y[{i}]: answer_start is {describe(start)}; give the answer's "
                    "character offset in its context (an int), or leave it out."
                )
            if c[start : start + len(text)] != text or start < 0:
                raise ValueError(
                    f"y[{i}]: answer {text!r} (start {start}) is not in its "
                    "context; give the answer text as it appears there."
                )
            examples.append(QAExample(str(i), q, c, ((text, int(start)),)))
        features = feats.qa_features(
            examples, self.tokenizer, self.sequence_length, self.doc_stride
        )
        return task_data.qa_dataset(
            features,
            batch_size,
            seed=self.seed,
            epoch_variable=epoch_variable,
            shuffle=shuffle,
        )

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        """Per pair `{"answer", "start", "end", "score"}` of (question,
        context) pairs (`QA_FORMS`); an empty list gives `[]`. On id dicts: the
        id-level `predict` (start/end logits). Anything else (a dict of
        columns, a tf.data.Dataset, None, a list of str) is an error naming
        `x`."""
        if is_ids(x):
            return self._predict_ids(x, batch_size, verbose, kwargs)
        batch_size = positive_int(batch_size, "batch_size", None)
        x, _ = self._tables(x, None, "x", targets=False)
        questions, contexts = _qa_pairs(x, "x")
        if not questions:
            return []
        return decode.answer_spans(
            questions,
            contexts,
            self.tokenizer,
            self.sequence_length,
            lambda ids: self._run_ids(ids, batch_size),
            doc_stride=self.doc_stride,
            max_answer_length=self.max_answer_length,
        )

    def predict_answers(self, x, batch_size=None):
        """The answer text of each pair ("" when no span fits)."""
        return [a["answer"] for a in self.predict(x, batch_size)]
