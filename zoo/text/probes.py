"""A multilingual probe set: sentences written for this project (not taken
from any corpus) where tokenizers that agree on English text part ways.

Export compares runtimes on them (the Python tokenizer against MediaPipe's
and the app's) and tests compare the zoo's tokenizers with their sources
(keras-hub, transformers). Each group stresses one rule:

- ACCENTED: German, Spanish, Italian, French, Portuguese, Czech, Polish and
  Vietnamese sentences (accents kept or stripped; composed and decomposed);
- CJK: Chinese, Japanese and Korean (ideographs split one by one; kana and
  Hangul not);
- COMPATIBILITY: characters NFKC folds (ligatures, full-width letters,
  superscripts, circled digits, ß, the Kelvin sign);
- CONTROLS: control and format characters (NUL, soft hyphen, zero-width
  space and joiner, a BOM inside text, U+FFFD, a right-to-left mark), and
  non-ASCII spaces (no-break, ideographic, thin);
- LONG_WORDS: words near the 100-character and 100-byte limits, where a
  limit in characters and one in bytes differ.
"""

from __future__ import annotations

ACCENTED = (
    "Der Bäcker öffnet um sechs Uhr früh, während die Straße noch schläft.",
    "Übermorgen fährt Jürgen mit seiner Großmutter nach München.",
    "Die Größe der Wohnung überraschte sogar die Maklerin.",
    "Wir müssen die Gebühren für das Schließfach bis Märzende zahlen.",
    "El niño comió una manzana en el jardín después de la lección.",
    "¿Cuándo llegará el tren de Córdoba a la estación de Atocha?",
    "La señora Muñoz explicó la situación económica con paciencia.",
    "Mañana habrá reunión sobre la política energética del país.",
    "Perché la città è così affollata il venerdì sera?",
    "Il caffè più buono si beve in quella piccola trattoria là giù.",
    "È già ora di partire: l'aereo decolla alle otto e un quarto.",
    "Però non è facile trovare un'università vicino alla città.",
    "L'élève a répondu à la question très précisément, à côté du maître.",
    "Ça coûte cher, mais la qualité du pâté est exceptionnelle.",
    "Où est la bibliothèque? Je voudrais emprunter un roman de Zoé.",
    "A estação de São Paulo está lotada às sextas-feiras à tarde.",
    "Não há informação sobre a eleição no coração da região.",
    "Příští týden pojedeme do Českých Budějovic za babičkou.",
    "Żółć i gęślą jaźń to zdanie, które zawiera wszystkie polskie znaki.",
    "Tiếng Việt có rất nhiều dấu thanh điệu khác nhau.",
    # The same words with combining marks instead of precomposed letters.
    "Der Ba\u0308cker o\u0308ffnet um sechs Uhr fru\u0308h.",
    "El nin\u0303o comio\u0301 una manzana en el jardi\u0301n.",
)

CJK = (
    "今天的天气非常好，我们去公园散步吧。",
    "这家餐厅的饺子很好吃，价格也不贵。",
    "東京駅から新幹線で大阪まで約二時間半かかります。",
    "わたしは毎朝コーヒーを飲みながら新聞を読みます。",
    "서울의 봄은 벚꽃으로 가득합니다.",
    "Mixed text: the 北京 office opens at 9:00, 東京 at 10:00.",
)

COMPATIBILITY = (
    "The ﬁnal ﬂight was ﬁne, said the oﬃcer.",
    "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ letters and ｄｉｇｉｔｓ １２３.",
    "The area is 25 m² and the volume 3 m³; x⁴ grows fast.",
    "Steps ① ② ③ are listed in the Ⅳ chapter.",
    "Die Straße heißt Großstraße, sagte der Bürgermeister.",
    "A temperature of 300 K (Kelvin sign) and ½ of the Å unit.",
    "Ligatures: Æsop, œuvre, ĳssel and the ǅ digraph.",
)

CONTROLS = (
    "A word\u00adwith a soft hyphen and a zero\u200bwidth space.",
    "Null\x00byte inside and a bell\x07 character.",
    "Joiner\u200dhere and a \ufeffBOM in the middle of text.",
    "Replacement \ufffd character and a \u200fright-to-left mark.",
    "No-break\u00a0space, ideographic\u3000space and thin\u2009space.",
    "Tab\tand\nnewline and carriage\rreturn in one line.",
    "Windows quotes read as Latin-1: \x93quoted\x94 and \x96 dash.",
)

LONG_WORDS = (
    "Short then " + "a" * 99 + " and " + "b" * 101 + " end.",
    "Accented " + "é" * 60 + " is 120 bytes but 60 characters.",
    "Cyrillic " + "ж" * 70 + " word of 70 letters.",
)

ALL = ACCENTED + CJK + COMPATIBILITY + CONTROLS + LONG_WORDS

GROUPS = {
    "accented": ACCENTED,
    "cjk": CJK,
    "compatibility": COMPATIBILITY,
    "controls": CONTROLS,
    "long_words": LONG_WORDS,
}
