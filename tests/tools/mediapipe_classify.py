"""Run MediaPipe Tasks' TextClassifier over texts (run by .venv-mediapipe's
Python; imports nothing of the project).

    .venv-mediapipe/bin/python tests/tools/mediapipe_classify.py MODEL.tflite TEXTS.json OUT.json

OUT.json: per text, the first head's categories as [index, score], every
category (max_results=-1), in MediaPipe's order (best first).
"""

import json
import sys

import mediapipe
from mediapipe.tasks.python import text
from mediapipe.tasks.python.core.base_options import BaseOptions

model, texts_file, out_file = sys.argv[1:4]
with open(texts_file, encoding="utf-8") as f:
    texts = json.load(f)
options = text.TextClassifierOptions(
    base_options=BaseOptions(model_asset_path=model), max_results=-1
)
with text.TextClassifier.create_from_options(options) as classifier:
    results = [
        [
            [c.index, float(c.score)]
            for c in classifier.classify(t).classifications[0].categories
        ]
        for t in texts
    ]
with open(out_file, "w", encoding="utf-8") as f:
    json.dump({"mediapipe": mediapipe.__version__, "results": results}, f)
