"""Reading a `.tflite` back: the operators its flatbuffer uses and the bytes
of its constant buffers (the evidence recorded in metadata.json)."""

from __future__ import annotations

import collections
import hashlib

try:
    from ai_edge_litert import schema_py_generated
except ImportError:  # the converter ships the same generated schema
    from tensorflow.lite.python import schema_py_generated


def op_list(content):
    """Operators a `.tflite` uses, read from its flatbuffer's operator codes.

    `{"builtin": [names], "custom": [names], "counts": {name: uses}}`; Flex ops
    show up as custom ops named `Flex...`.
    """
    schema = schema_py_generated
    model = schema.Model.GetRootAs(content, 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    codes = []
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        if code.CustomCode() is not None:
            codes.append(("custom", code.CustomCode().decode()))
        else:
            # Codes above 127 live in builtin_code; older files use the
            # deprecated byte-sized field.
            number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            codes.append(("builtin", names.get(number, f"BUILTIN_{number}")))
    counts = collections.Counter()
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for j in range(graph.OperatorsLength()):
            counts[codes[graph.Operators(j).OpcodeIndex()][1]] += 1
    return {
        "builtin": sorted({n for kind, n in codes if kind == "builtin"}),
        "custom": sorted({n for kind, n in codes if kind == "custom"}),
        "counts": dict(sorted(counts.items())),
    }


def weight_buffers(content):
    """Constant-buffer bytes of a `.tflite` and how many of them are duplicates.

    The evidence that several signatures share one copy of the weights:
    `duplicate_bytes` counts bytes in buffers whose content equals another
    buffer's (a second copy of a weight would show up here).
    """
    schema = schema_py_generated
    model = schema.Model.GetRootAs(content, 0)
    seen = {}
    total = duplicate = 0
    for i in range(model.BuffersLength()):
        buffer = model.Buffers(i)
        if buffer.DataLength():
            data = buffer.DataAsNumpy().tobytes()
        elif buffer.Size() > 1:  # stored outside the flatbuffer (large models)
            data = bytes(content[buffer.Offset() : buffer.Offset() + buffer.Size()])
        else:
            continue
        total += len(data)
        digest = hashlib.sha256(data).digest()
        if digest in seen and len(data) >= 1024:
            duplicate += len(data)
        seen.setdefault(digest, i)
    return {"constant_bytes": total, "duplicate_bytes": duplicate}
