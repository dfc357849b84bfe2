"""The pre-training objective flags (`--objective`, `--masking`,
`--packing` and the older `--no-nsp`, `--whole-word`) resolved and checked
into one `PretrainingObjective`: what the examples carry.
"""

from __future__ import annotations

import dataclasses

OBJECTIVE_PARTS = ("mlm", "nsp", "sop", "sbo")
MASKINGS = ("token", "whole-word", "span")
PACKINGS = ("sentences", "full")


@dataclasses.dataclass(frozen=True)
class PretrainingObjective:
    """What the examples carry: `sentence` is "nsp", "sop" or None; `sbo`
    the span-boundary targets; `masking` one of `MASKINGS`; `packing` one of
    `PACKINGS` ("sentences": a pair, or with no sentence objective a run of
    one document's sentences; "full": RoBERTa's FULL-SENTENCES)."""

    sentence: str | None = "nsp"
    sbo: bool = False
    masking: str = "token"
    packing: str = "sentences"

    @property
    def name(self):
        return "+".join(
            ["mlm"] + [p for p in (self.sentence,) if p] + (["sbo"] if self.sbo else [])
        )


def pretraining_objective(
    objective=None, masking=None, packing=None, *, nsp=None, whole_word=None
):
    """Resolve the objective flags into a `PretrainingObjective`.

    `objective` is "mlm" plus any of "+nsp", "+sop" (at most one of the two)
    and "+sbo", e.g. "mlm+sop+sbo"; default "mlm+nsp", or "mlm" when
    `nsp=False`. `nsp` and `whole_word` are the older switches
    (`--no-nsp`, `--whole-word`): they map onto `objective` and `masking`,
    and contradicting them is an error. `masking` defaults to "span" with
    "+sbo" (which needs spans), else "whole-word" with `whole_word=True`,
    else "token". `packing` defaults to "sentences"."""
    if objective is None:
        objective = "mlm" if nsp is False else "mlm+nsp"
    parts = [p.strip().lower() for p in str(objective).split("+")]
    unknown = [p for p in parts if p not in OBJECTIVE_PARTS]
    if unknown or "mlm" not in parts or len(set(parts)) != len(parts):
        raise ValueError(
            f"--objective {objective!r}: expected 'mlm' joined by '+' with any of nsp, sop, "
            "sbo (each once), e.g. mlm, mlm+nsp, mlm+sop, mlm+sbo, mlm+sop+sbo."
        )
    if "nsp" in parts and "sop" in parts:
        raise ValueError(
            f"--objective {objective!r}: NSP and SOP both classify segment B "
            "from the pooled output; choose one."
        )
    if nsp is False and "nsp" in parts:
        raise ValueError(
            f"--no-nsp contradicts --objective {objective!r}; drop one of them "
            "(--objective mlm is --no-nsp)."
        )
    if nsp is True and "nsp" not in parts:
        raise ValueError(f"nsp=True contradicts objective={objective!r}; drop one of them.")
    sbo = "sbo" in parts
    if masking is None:
        masking = "span" if sbo else ("whole-word" if whole_word else "token")
    if masking not in MASKINGS:
        raise ValueError(f"--masking {masking!r}: expected one of {', '.join(MASKINGS)}.")
    if whole_word and masking != "whole-word":
        raise ValueError(
            f"--whole-word contradicts --masking {masking}; drop one of them "
            "(--masking whole-word is --whole-word)."
        )
    if sbo and masking != "span":
        raise ValueError(
            f"--objective {objective}: the span-boundary objective predicts "
            f"span tokens from their boundaries and needs --masking span; "
            f"received --masking {masking}."
        )
    packing = packing or "sentences"
    if packing not in PACKINGS:
        raise ValueError(f"--packing {packing!r}: expected one of {', '.join(PACKINGS)}.")
    sentence = "nsp" if "nsp" in parts else ("sop" if "sop" in parts else None)
    if packing == "full" and sentence:
        raise ValueError(
            f"--objective {objective}: full-sentence packing (--recipe roberta) "
            f"makes one segment, so there is no segment B for {sentence.upper()}; "
            "use --objective mlm or mlm+sbo, or --packing sentences."
        )
    return PretrainingObjective(sentence, sbo, masking, packing)
