"""Generates docs/supported_ops.md from the capability rule table.

The table lives in C++ (csrc/support/rules.cc) and is read through
``nacc._core.rules_table()``, so the document, the delegate's and the EP's
partitioning and the per-model reports can never disagree. Regenerate with::

    python -m nacc.supported_ops > docs/supported_ops.md
    python -m nacc.supported_ops --output docs/supported_ops.md

tests/test_support.py fails when the checked-in file is stale.
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from nacc import _core

__all__ = ["render", "main"]

_HOST_RULE = "npu_op_kind"


def _anchor(kind: str) -> str:
    return kind.lower()


def _bullet(rule: dict) -> str:
    return f"- `{rule['name']}`: {rule['text']}"


def render() -> str:
    """The Markdown text of docs/supported_ops.md."""
    rules = _core.rules_table()
    kinds = _core.op_kinds()
    general = [r for r in rules if r["general"]]
    host = next(r for r in rules if r["name"] == _HOST_RULE)
    specific = {k["name"]: [r for r in rules if not r["general"] and k["name"] in r["op_kinds"]]
                for k in kinds}
    gates = [r["name"] for r in general if r["gate"]]

    lines = [
        "# Supported operators",
        "",
        "<!-- Generated from the capability rules in csrc/support/rules.cc by",
        "     `python -m nacc.supported_ops > docs/supported_ops.md`; do not edit by hand.",
        "     tests/test_support.py fails when this file is stale. -->",
        "",
        "The NACC NPU runs an op when every constraint that applies to its kind holds.",
        "Otherwise the op stays on the host runtime (TensorFlow Lite or ONNX Runtime), and",
        "the delegate / execution provider reports each rule it breaks, for example:",
        "",
        "    CONV_2D 'conv7': stride 4x4 \u2014 stride must be in [1, 3] (NACC_KERNEL.K_STRIDE_X/Y)",
        "",
        "The names in backticks are the rule names that `nacc._core.check_op` and the",
        "reports return. The limits are those of the hardware reference (`nacc docs hardware`,",
        "\u00a71-\u00a73); a rule text citing \u00a7N means its section N. `nacc supported-ops`",
        "prints this page.",
        "",
        "## Op kinds",
        "",
        "Data forms (NACC_SPEC \u00a79, `nacc docs hardware`): `int8` (int8 feature maps and",
        "weights), `16x8` (TFLite's int16 activations with zero point 0, int8 weights, int64",
        "bias), `int4 weights` (weights stored two per byte). The ONNX Runtime EP claims",
        "int16 QDQ units only with its provider option `int16_activations=1`, and",
        "units with INT4 (QInt4) weights only with `int4_weights=1` (docs/onnxruntime_ep.md).",
        "",
        "| op kind | runs on | data forms | constraints of its own |",
        "|---|---|---|---|",
    ]
    for k in kinds:
        name = k["name"]
        forms = "; ".join(k["data_forms"])
        lines.append(f"| [{name}](#{_anchor(name)}) | {k['description']} | {forms} | "
                     f"{len(specific[name])} |")
    lines += [
        "",
        "## General constraints",
        "",
        "Every op kind above must also satisfy these. They are checked first, in this order;",
        "a node that fails one of " + ", ".join(f"`{g}`" for g in gates) + " is not checked further,",
        "since the later rules read the structure those establish.",
        "",
    ]
    lines += [_bullet(r) for r in general]
    for k in kinds:
        name = k["name"]
        lines += ["", f"## {name}", "", k["description"] + ".",
                  "Data forms: " + "; ".join(k["data_forms"]) + ".", ""]
        own = specific[name]
        if own:
            lines += [_bullet(r) for r in own]
        else:
            lines.append("Only the general constraints apply.")
    lines += [
        "",
        "## Host-only ops",
        "",
        "Any op of another kind (a TFLite builtin or custom op, an ONNX operator not mapped to",
        f"one of the kinds above) runs on the host: `{host['name']}` \u2014 {host['text']}.",
        "Reports list such ops once per kind, e.g. `Info: SOFTMAX runs on the host`.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nacc.supported_ops",
        description="Print (or write) docs/supported_ops.md, generated from the capability rules.")
    parser.add_argument("-o", "--output", help="write to this file instead of stdout")
    args = parser.parse_args(argv)
    text = render()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
