"""Tagging schemes: which one a set of tags uses, and the entity spans a
sequence of tags marks under it.

- "BIO": `B-X` begins an X entity, `I-X` continues it (IOB2; IOB1's `I-X`
  that does not continue an X entity begins one, as conlleval reads it).
- "BIOES": also `E-X` ends an entity and `S-X` is a one-word entity
  (BILOU's `L-X` and `U-X` read the same).
- "IO": bare types (`PER`, `LOC`; also part-of-speech tags such as `NN`):
  each run of one type is an entity.

`O` is outside in every scheme. A mix of bare and prefixed types has no
single reading and is refused by the CoNLL reader, so a tagging model's
entity F1 never silently counts zero entities.
"""

from __future__ import annotations

_BEGIN, _INSIDE, _END, _SINGLE = {"B"}, {"I"}, {"E", "L"}, {"S", "U"}
PREFIXES = _BEGIN | _INSIDE | _END | _SINGLE


def _prefixed(tag):
    prefix, dash, label = tag.partition("-")
    return bool(dash) and prefix in PREFIXES and bool(label)


def tag_scheme(tags) -> str:
    """ "BIO", "BIOES" or "IO" for a collection of tags (see the module doc);
    ValueError naming two tags when bare and prefixed types are mixed."""
    tags = set(tags) - {"O"}
    prefixed = sorted(t for t in tags if _prefixed(t))
    bare = sorted(t for t in tags if not _prefixed(t))
    if prefixed and bare:
        raise ValueError(
            f"the tags mix prefixed types ({prefixed[0]!r}) with bare ones ({bare[0]!r}); "
            "use one scheme: BIO (B-X, I-X), BIOES (also E-X, S-X) or bare types (IO), "
            "with O outside."
        )
    if bare:
        return "IO"
    if any(t[0] in _END | _SINGLE for t in prefixed):
        return "BIOES"
    return "BIO"


def tag_entities(tags, scheme=None) -> set:
    """Set of `(type, start, end)` spans (end exclusive) that `tags` mark
    under `scheme` (default: the scheme of `tags` themselves)."""
    tags = list(tags)
    scheme = scheme or tag_scheme(tags)
    spans, start, kind = set(), None, None
    for i, tag in enumerate([*tags, "O"]):
        if scheme == "IO" or tag == "O":
            prefix, label = None, (None if tag == "O" else tag)
        else:
            prefix, _, label = tag.partition("-")
        begins = label != kind or prefix in _BEGIN | _SINGLE
        if begins and kind is not None:
            spans.add((kind, start, i))
            kind = None
        if label is not None and kind is None:
            start, kind = i, label
        if prefix in _END | _SINGLE:
            spans.add((kind, start, i + 1))
            kind = None
    return spans
