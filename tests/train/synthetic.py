"""Small synthetic NER and SQuAD-format fixtures (no real NER/QA data can be
installed here) and a two-topic classification CSV for quick runs. Names
and places include words that split into several word pieces, so label
alignment and answer offsets are exercised."""

from __future__ import annotations

import json
import random

PEOPLE = [
    "Anna Johanson",
    "Kofi Okonkwo",
    "Mei Takahashi",
    "Lars Gunnarsson",
    "Priya Raman",
    "Tomas Vavrinec",
    "Ines Albuquerque",
    "Yusuf Demirci",
]
PLACES = [
    "Reykjavik",
    "Ouagadougou",
    "Thessaloniki",
    "Valparaiso",
    "Bratislava",
    "Kaohsiung",
    "Tromso",
    "Antananarivo",
]
ORGS = [
    "Norwegian Fisheries Board",
    "Helvetic Instruments",
    "Kestrel Logistics",
    "Atlantic Zinc Company",
    "Orion Biotech",
]
NER_TEMPLATES = [
    "{per} flew to {loc} on Monday .",
    "Yesterday {per} joined {org} as an engineer .",
    "{org} opened an office in {loc} last year .",
    "In {loc} , {per} spoke about {org} .",
]


def _tagged(template, rng):
    words, tags = [], []
    for part in template.split():
        if part in ("{per}", "{loc}", "{org}"):
            kind = part[1:-1].upper()
            name = rng.choice({"PER": PEOPLE, "LOC": PLACES, "ORG": ORGS}[kind])
            for i, w in enumerate(name.split()):
                words.append(w)
                tags.append(("B-" if i == 0 else "I-") + kind)
        else:
            words.append(part)
            tags.append("O")
    return words, tags


def write_conll(path, n, seed):
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        words, tags = _tagged(rng.choice(NER_TEMPLATES), rng)
        lines += [f"{w} _ _ {t}" for w, t in zip(words, tags)] + [""]
    path.write_text("\n".join(lines))


def write_squad(path, n, seed, unanswerable=0.0):
    rng = random.Random(seed)
    qas_paragraphs = []
    for i in range(n):
        per, per2 = rng.sample(PEOPLE, 2)
        loc, org = rng.choice(PLACES), rng.choice(ORGS)
        filler = " ".join(
            rng.choice(["The weather was mild.", "Trains ran late.", "Markets were calm."])
            for _ in range(rng.randint(0, 3))
        )
        context = f"{filler} {per} was born in {loc}. {per2} works for {org}.".strip()
        kind = rng.random()
        if kind < unanswerable:
            question, answer = (
                f"Where was {rng.choice([p for p in PEOPLE if p not in (per, per2)])} born?",
                None,
            )
        elif kind < 0.5 + unanswerable / 2:
            question, answer = f"Where was {per} born?", loc
        else:
            question, answer = f"Who does {per2} work for?", org
        qa = {
            "id": f"q{i}",
            "question": question,
            "answers": []
            if answer is None
            else [{"text": answer, "answer_start": context.index(answer)}],
        }
        if answer is None:
            qa["is_impossible"] = True
        qas_paragraphs.append({"context": context, "qas": [qa]})
    path.write_text(
        json.dumps(
            {
                "version": "2.0",
                "data": [{"title": "synthetic", "paragraphs": qas_paragraphs}],
            }
        )
    )


def write_topics_csv(path):
    """60 rows of two easy topics (sport, tech), texts of 1-3 sentences."""
    topics = {
        "sport": "the striker scored a late goal and the keeper saved a penalty",
        "tech": "the chip maker released a faster processor and new software",
    }
    rows = ["text,label"]
    for i in range(30):
        for label, sentence in topics.items():
            rows.append(f'"{" ".join([sentence] * (1 + i % 3))} {i}",{label}')
    path.write_text("\n".join(rows) + "\n")
