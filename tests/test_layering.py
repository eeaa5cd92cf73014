"""The one-way dependency rule of the core (docs/architecture.md, issue 12): every
`#include "folder/..."` line of csrc/, delegate/ and ep/ is checked against the
table of allowed edges. A new edge fails here with the file and the line; the
cure is to move the code to the layer that owns it, not to widen the table.
"""
from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# folder -> the folders its files may include (itself always allowed). The same
# table is in docs/architecture.md; test_table_matches_the_docs keeps them equal.
ALLOWED = {
    "common": set(),
    "arch": {"common"},
    "ir": {"arch", "common"},
    "quant": {"arch", "ir", "common"},
    "device": {"arch", "common"},
    "runtime": {"device", "arch", "common"},
    "support": {"quant", "ir", "arch", "common"},
    "compiler": {"support", "quant", "ir", "runtime", "arch", "common"},
    "partition": {"compiler", "support", "runtime", "ir", "arch", "common"},
    "bindings": {"common", "arch", "ir", "quant", "device", "runtime", "support", "compiler",
                 "partition"},
    "delegate": {"partition", "support", "ir", "runtime", "arch", "common"},
    "ep": {"partition", "support", "ir", "runtime", "arch", "common"},
}
# The compiler includes only the Program format of the runtime.
COMPILER_MAY_INCLUDE_FROM_RUNTIME = {"runtime/program.h"}
# Edges that exist but are being removed. Empty since the frontends compile
# and run through csrc/partition/ (issue 12); an entry that no longer occurs
# fails the test too.
KNOWN_VIOLATIONS: set = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _folder_of(path: str) -> str:
    rel = os.path.relpath(path, ROOT)
    parts = rel.split(os.sep)
    return parts[1] if parts[0] == "csrc" else parts[0]


def _sources():
    for top in ("csrc", "delegate", "ep"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".h", ".cc", ".inc")):
                    yield os.path.join(dirpath, f)


def _edges():
    for path in _sources():
        src = _folder_of(path)
        rel = os.path.relpath(path, ROOT)
        text = open(path, encoding="utf-8").read()
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            if "/" not in target:  # a frontend's own header (e.g. "options.h")
                continue
            dst = target.split("/")[0]
            if dst == src:
                continue
            line = text.count("\n", 0, m.start()) + 1
            yield rel, line, src, target, dst


def test_include_rule():
    bad, seen_known = [], set()
    for rel, line, src, target, dst in _edges():
        if dst not in ALLOWED:
            bad.append(f"{rel}:{line}: includes {target} ({dst}/ is not a layer)")
            continue
        allowed = dst in ALLOWED[src]
        if src == "compiler" and dst == "runtime":
            allowed = target in COMPILER_MAY_INCLUDE_FROM_RUNTIME
        if allowed:
            continue
        if (rel, target) in KNOWN_VIOLATIONS:
            seen_known.add((rel, target))
            continue
        bad.append(f"{rel}:{line}: {src}/ may not include {target}")
    assert not bad, "layering errors (docs/architecture.md):\n" + "\n".join(bad)
    gone = KNOWN_VIOLATIONS - seen_known
    assert not gone, f"remove from KNOWN_VIOLATIONS (fixed): {sorted(gone)}"


def test_every_source_folder_is_a_layer():
    folders = {_folder_of(p) for p in _sources()}
    assert folders <= set(ALLOWED), folders - set(ALLOWED)


def test_register_fields_declared_only_in_arch():
    """No file outside csrc/arch resolves a register field by name at compile
    time: the FieldRef constants of arch/fields.h are the only ones."""
    decl = re.compile(r'field_of\(\s*Reg::')
    offenders = [os.path.relpath(p, ROOT) for p in _sources()
                 if _folder_of(p) != "arch" and decl.search(open(p, encoding="utf-8").read())]
    assert not offenders, offenders


def test_table_matches_the_docs():
    doc = open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8").read()
    rows = {}
    for m in re.finditer(r"^\| `(\w+)/` \| ([^|]*) \|", doc, re.M):
        rows[m.group(1)] = {w.strip("` ") for w in m.group(2).replace("–", "").split(",")
                            if w.strip("` ")}
    assert rows == ALLOWED, {k: (rows.get(k), ALLOWED.get(k)) for k in set(rows) | set(ALLOWED)
                             if rows.get(k) != ALLOWED.get(k)}
