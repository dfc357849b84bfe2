"""A protobuf text-format scanner (`parse_text_proto`): strings with
escapes, `#` comments, `{}` and `<>` messages, lists, scalars. Every field
keeps its offsets in the text, so models.config can have an entry replaced
or added without the rest of the text being touched; messages nest at most
`MAX_DEPTH` levels, so a hostile file is refused with a line, not by memory
or Python's recursion limit."""

from __future__ import annotations

import dataclasses
import re

# How deep messages and lists may nest (TF Serving's config nests 5).
MAX_DEPTH = 32


class TextProtoError(ValueError):
    """Text that is not protobuf text format; the message gives line and column."""


_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>-?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFuUlL]*))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[{}<>\[\]:,;/-])
    """,
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "a": "\a",
            "b": "\b", "f": "\f", "v": "\v", "?": "?"}  # fmt: skip


@dataclasses.dataclass
class Field:
    """One field of a text proto: its name, its value (a decoded `str`, a
    `Scalar`'s text, a list of `Field`s for a message, or a tuple of values
    for `[...]`) and where it is in the text (`start` at its name, `end`
    after its value)."""

    name: str
    value: object
    start: int
    end: int

    def fields(self, name):
        return (
            [f for f in self.value if f.name == name]
            if isinstance(self.value, list)
            else []
        )

    def string(self, name):
        """The value of the string field `name`, or None."""
        found = [f.value for f in self.fields(name) if type(f.value) is str]
        return found[-1] if found else None


def _position(text, offset):
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _tokens(text):
    tokens, i = [], 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if m is None:
            what = "a string not closed on its line" if text[i] in "\"'" else repr(text[i])
            raise TextProtoError(f"{what} at {_position(text, i)}")
        if m.lastgroup not in ("space", "comment"):
            tokens.append((m.lastgroup, m.group(), m.start(), m.end()))
        i = m.end()
    return tokens


def _decode(literal, text, offset):
    body, out, i = literal[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :]).group()
            out.append(chr(int(digits, 8)))
            i += 1 + len(digits)
        elif nxt in "xX" and re.match(r"[0-9a-fA-F]", body[i + 2 : i + 3]):
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :]).group()
            out.append(chr(int(digits, 16)))
            i += 2 + len(digits)
        else:
            raise TextProtoError(
                f"unknown escape \\{nxt} in a string at {_position(text, offset)}"
            )
    return "".join(out)


class _Parser:
    def __init__(self, text, max_depth=MAX_DEPTH):
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0
        self.depth = 0  # messages and lists open at this point
        self.max_depth = max_depth

    def enter(self, start):
        """One level deeper; refused past `max_depth`, long before Python's
        recursion limit (each level is three frames)."""
        self.depth += 1
        if self.depth > self.max_depth:
            raise TextProtoError(
                f"messages nested more than {self.max_depth} levels deep at "
                f"{_position(self.text, start)} (TF Serving's config nests 5)"
            )

    def peek(self):
        return (
            self.tokens[self.i]
            if self.i < len(self.tokens)
            else ("end", "", len(self.text), len(self.text))
        )

    def take(self, *expected):
        token = self.peek()
        if expected and token[1] not in expected:
            got = "the end of the file" if token[0] == "end" else repr(token[1])
            raise TextProtoError(
                f"expected {' or '.join(map(repr, expected))}, found {got} at "
                f"{_position(self.text, token[2])}"
            )
        self.i += 1
        return token

    def fields(self, closer=None):
        found = []
        while True:
            kind, value, start, _ = self.peek()
            if kind == "end":
                if closer is not None:
                    raise TextProtoError(
                        f"a message is not closed (no {closer!r}) at the end"
                    )
                return found
            if closer is not None and value == closer:
                return found
            found.append(self.field())

    def field(self):
        kind, name, start, end = self.take()
        if name == "[":  # an extension or Any: [type.name] or [domain/type.name]
            parts = []
            while self.peek()[1] != "]":
                if self.peek()[0] == "end":
                    raise TextProtoError(f"'[' not closed at {_position(self.text, start)}")
                parts.append(self.take()[1])
            self.take("]")
            name = "[" + "".join(parts) + "]"
        elif kind != "ident":
            raise TextProtoError(
                f"expected a field name, found {name!r} at {_position(self.text, start)}"
            )
        colon = self.peek()[1] == ":"
        if colon:
            self.take(":")
        nxt = self.peek()
        if nxt[1] in ("{", "<"):
            value, end = self.message()
        elif not colon:
            raise TextProtoError(
                f"expected ':' after {name!r} at {_position(self.text, nxt[2])}"
            )
        elif nxt[1] == "[":
            value, end = self.list()
        else:
            value, end = self.scalar()
        if self.peek()[1] in (",", ";"):
            self.take()
        return Field(name, value, start, end)

    def message(self):
        _, opener, start, _ = self.take("{", "<")
        self.enter(start)
        closer = "}" if opener == "{" else ">"
        value = self.fields(closer)
        self.depth -= 1
        return value, self.take(closer)[3]

    def list(self):
        self.enter(self.take("[")[2])
        values = []
        while self.peek()[1] != "]":
            if values:
                self.take(",")
            if self.peek()[1] in ("{", "<"):
                values.append(self.message()[0])
            else:
                values.append(self.scalar()[0])
        self.depth -= 1
        return tuple(values), self.take("]")[3]

    def scalar(self):
        kind, value, start, end = self.take()
        if kind == "string":
            parts = [_decode(value, self.text, start)]
            while self.peek()[0] == "string":  # adjacent strings concatenate
                _, more, at, end = self.take()
                parts.append(_decode(more, self.text, at))
            return "".join(parts), end
        if value == "-" and self.peek()[0] in ("ident", "number"):
            _, rest, _, end = self.take()
            return Scalar("-" + rest), end
        if kind in ("ident", "number"):
            return Scalar(value), end
        raise TextProtoError(
            f"expected a value, found {value!r} at {_position(self.text, start)}"
        )


class Scalar(str):
    """A non-string scalar's text (a number, an enum, true/false): not a string field."""


def parse_text_proto(text):
    """The top-level `Field`s of a protobuf text-format message."""
    return _Parser(text).fields()
