"""Span QA data: SQuAD v1.1 / v2.0 JSON, checked against SQuAD's shape,
as `QAExample`s.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

from zoo.text.readers.files import _need, _need_file, _read_text, json_value


@dataclasses.dataclass(frozen=True)
class QAExample:
    qid: str
    question: str
    context: str
    # ((text, char_start), ...); empty when unanswerable, None when unlabelled
    # (zoo distill --unlabelled)
    answers: tuple | None
    is_impossible: bool = False


def read_squad(path):
    """List of `QAExample` from SQuAD v1.1 or v2.0 JSON. A part of the file
    not in SQuAD's shape is an error naming the file and the question (or
    the article and paragraph)."""
    path = pathlib.Path(path)
    _need_file(
        path,
        "QA data is a SQuAD JSON file",
        other_formats=(".jsonl", ".csv", ".tsv", ".txt"),
    )
    data = json_value(_read_text(path), path)
    shape = 'expected SQuAD JSON: {"data": [{"paragraphs": [{"context", "qas"}]}]}'
    _need(
        isinstance(data, dict) and isinstance(data.get("data"), list),
        path,
        f"{shape}.",
    )

    def need_list(value, where):
        _need(
            isinstance(value, list),
            path,
            f"{where} is {type(value).__name__} {json.dumps(value)[:40]}, not a list; {shape}.",
        )
        return value

    def need_dict(value, where):
        _need(
            isinstance(value, dict),
            path,
            f"{where} is {type(value).__name__} {json.dumps(value)[:40]}, not an object; "
            f"{shape}.",
        )
        return value

    examples, seen = [], {}
    for a, article in enumerate(data["data"]):
        article = need_dict(article, f"data[{a}]")
        for p, paragraph in enumerate(
            need_list(article.get("paragraphs", []), f"data[{a}].paragraphs")
        ):
            where = f"data[{a}].paragraphs[{p}]"
            paragraph = need_dict(paragraph, where)
            context = paragraph.get("context")
            _need(
                isinstance(context, str),
                path,
                f"{where}: `context` is {json.dumps(context)[:40]}; every paragraph needs "
                "its context as a string.",
            )
            for q, qa in enumerate(need_list(paragraph.get("qas", []), f"{where}.qas")):
                qa = need_dict(qa, f"{where}.qas[{q}]")
                example = _squad_question(qa, context, path, f"{where}.qas[{q}]")
                # Predictions and scores are keyed by id: a repeated one would
                # score one question's answer against another's.
                _need(
                    example.qid not in seen,
                    path,
                    f"{where}.qas[{q}]: id {example.qid!r:.60} is also the id of "
                    f"{seen.get(example.qid)}; every question needs a unique id.",
                )
                seen[example.qid] = f"{where}.qas[{q}]"
                examples.append(example)
    _need(examples, path, "no questions found.")
    return examples


def _squad_question(qa, context, path, where):
    """One `QAExample` of a SQuAD `qas` entry, checked."""
    qid = qa.get("id")
    _need(
        isinstance(qid, (str, int)) and not isinstance(qid, bool) and str(qid) != "",
        path,
        f"{where}: the question has no `id` (found {json.dumps(qid)[:40]}); every "
        "question needs a unique id.",
    )
    name = f"question {qid!r}"
    _need(
        isinstance(qa.get("question"), str),
        path,
        f"{name}: `question` is {json.dumps(qa.get('question'))[:40]}, not a string.",
    )
    impossible = qa.get("is_impossible", False)
    _need(
        isinstance(impossible, bool),
        path,
        f"{name}: `is_impossible` is {json.dumps(impossible)[:40]}; expected true or false "
        '(a JSON boolean: the string "false" would read as true).',
    )
    raw_answers = qa.get("answers", [])
    _need(
        isinstance(raw_answers, list),
        path,
        f"{name}: `answers` is {json.dumps(raw_answers)[:40]}, not a list of "
        '{"text", "answer_start"}.',
    )
    answers = []
    for answer in raw_answers:
        text = answer.get("text") if isinstance(answer, dict) else None
        start = answer.get("answer_start") if isinstance(answer, dict) else None
        _need(
            isinstance(text, str),
            path,
            f'{name}: an answer is {json.dumps(answer)[:60]}; expected {{"text": '
            '"...", "answer_start": N}.',
        )
        try:
            if isinstance(start, (bool, float)) or start is None:
                raise ValueError
            start = int(start)
        except (TypeError, ValueError):
            raise ValueError(
                f"{path}: {name}: answer {text!r} has answer_start {json.dumps(start)[:20]}; "
                "give the character offset of the answer in its context (an integer)."
            ) from None
        _need(
            text.strip() != "",
            path,
            f"{name}: an answer's text is {text!r}; give the answer as it appears in the "
            "context (an unanswerable question has no answers and is_impossible true).",
        )
        _need(
            0 <= start < len(context) and context[start : start + len(text)] == text,
            path,
            f"{name}: answer {text!r:.60} is not at answer_start={start} of its context "
            f"({len(context):,} characters).",
        )
        answers.append((text, start))
    _need(
        answers or impossible,
        path,
        f"{name} has no answers and is not is_impossible.",
    )
    return QAExample(str(qid), qa["question"], context, tuple(answers), impossible)
