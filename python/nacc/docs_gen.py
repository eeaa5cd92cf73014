"""Generates the tables of docs/command_stream.md and docs/hardware.md from the C++ tables.

The opcode table and the register banks in the documents are written between
``<!-- BEGIN GENERATED: name -->`` and ``<!-- END GENERATED: name -->`` markers
from ``nacc._core.opcode_table()`` and ``nacc._core.register_table()``, the
same data the device, the emitter and the disassembler use. The prose around
them is hand-written. A test fails when the checked-in file is stale.

    python -m nacc.docs_gen            # rewrite docs/command_stream.md and docs/hardware.md
    python -m nacc.docs_gen --check    # exit 1 if one is stale
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys

from nacc import _core

# Relative to the current directory: run from the root of a nacc checkout (the
# installed package has no docs/ beside it).
DOC_PATH = pathlib.Path("docs") / "command_stream.md"
DOC_PATHS = (DOC_PATH, pathlib.Path("docs") / "hardware.md")

_BLOCK = re.compile(
    r"(<!-- BEGIN GENERATED: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)"
    r"(<!-- END GENERATED: (?P=name) -->)",
    re.S,
)

_BANK_TITLES = {
    "compute": "NACC compute bank (0x0000-0x00FC, [N] §5)",
    "command": "Command-processor bank (0x1000 + [C] offset)",
    "batch": "Batch-handler bank (0x2000 + [D] offset)",
}


def _hex(v: int, digits: int = 8) -> str:
    return f"0x{v:0{digits}X}"


def _cell(text: str) -> str:
    # The C++ tables cite the project's spec as "NACC_SPEC §N"; the shipped documents
    # call it by the file users have: hardware.md, numbered the same way.
    text = re.sub(r"NACC_SPEC\b", "hardware.md", text)
    return text.replace("|", "\\|").replace("<", "\\<")


def _bits(f: dict) -> str:
    return str(f["msb"]) if f["msb"] == f["lsb"] else f"{f['msb']}:{f['lsb']}"


def _field_description(f: dict) -> str:
    text = f["description"]
    if f["values"]:
        text += "; values: " + ", ".join(f"{v} {n}" for v, n in sorted(f["values"].items()))
    if f["signed"]:
        text += " (signed)"
    return _cell(text)


def _field_table(reg: dict) -> list[str]:
    lines = ["| bits | field | access | reset | description |", "|---|---|---|---|---|"]
    for f in reg["fields"]:
        lines.append(
            f"| {_bits(f)} | {f['name']} | {f['access']} | {hex(f['reset'])} "
            f"| {_field_description(f)} |"
        )
    return lines


def _notes(reg: dict) -> str:
    notes = []
    if reg["stream_writable"]:
        notes.append("stream")
    if reg["region_address"]:
        notes.append("region address")
    if reg["trigger"]:
        notes.append("trigger")
    if reg["alias_of"]:
        notes.append(f"view of {reg['alias_of']}")
    if reg["project_defined"]:
        notes.append("project")
    return ", ".join(notes)


def _is_batch_base(reg: dict) -> bool:
    return re.fullmatch(r"BATCH\d+_ADDR\d+_[LH]", reg["name"]) is not None


def render_opcodes() -> str:
    lines = [
        "| opcode | value | kind | parameter (bits 31..16) | payload (word 1) | semantics |",
        "|---|---|---|---|---|---|",
    ]
    for op in _core.opcode_table():
        semantics = op["semantics"]
        if op["ctrl_rule"]:
            semantics += f" NACC_CTRL must have {op['ctrl_rule']}."
        lines.append(
            f"| {op['name']} | {_hex(op['value'], 3)} | {op['kind']} | {_cell(op['parameter'])} "
            f"| {_cell(op['payload']) or '-'} | {_cell(semantics)} |"
        )
    return "\n".join(lines) + "\n"


def render_registers() -> str:
    regs = _core.register_table()
    out: list[str] = []
    for bank, title in _BANK_TITLES.items():
        bank_regs = [r for r in regs if r["bank"] == bank]
        listed = [r for r in bank_regs if not _is_batch_base(r)]
        out += [f"### {title}", ""]
        out += ["| offset | register | reset | notes | description |", "|---|---|---|---|---|"]
        for r in listed:
            out.append(
                f"| {_hex(r['offset'], 4)} | {r['name']} | {_hex(r['reset'])} | {_notes(r)} "
                f"| {_cell(r['description'])} |"
            )
        batch = [r for r in bank_regs if _is_batch_base(r)]
        if batch:
            out.append(
                "| 0x2200 + 0x40·b + 8·i | BATCHb_ADDRi_L | 0x00000000 | | "
                "batch handler b (0..11), region i (0..7) base, bits 31..0 |"
            )
            out.append(
                "| 0x2204 + 0x40·b + 8·i | BATCHb_ADDRi_H | 0x00000000 | | "
                "batch handler b (0..11), region i (0..7) base, bits 43..32 |"
            )
        out.append("")
        for r in listed:
            out += [f"#### {r['name']} ({_hex(r['offset'], 4)})", ""]
            out += _field_table(r)
            out.append("")
        if batch:
            first = {r["name"]: r for r in batch}
            for suffix in ("L", "H"):
                out += [f"#### BATCHb_ADDRi_{suffix}", ""]
                out += _field_table(first[f"BATCH0_ADDR0_{suffix}"])
                out.append("")
            out += ["Offsets of BATCHb_ADDRi_L (BATCHb_ADDRi_H is 4 bytes higher):", ""]
            out.append("| b \\ i | " + " | ".join(str(i) for i in range(8)) + " |")
            out.append("|---|" + "---|" * 8)
            offsets = {r["name"]: r["offset"] for r in batch}
            for b in range(12):
                row = [_hex(offsets[f"BATCH{b}_ADDR{i}_L"], 4) for i in range(8)]
                out.append(f"| {b} | " + " | ".join(row) + " |")
            out.append("")
    return "\n".join(out)


def example_stream():
    """The example of the document: a 3x3 convolution with ReLU, then an
    8-byte DMA copy, built with the emitter. Two writes are dropped:
    NACC_IN_K_DMA_ADDR = region 0 + 0 is the reset value, and the second
    NACC_KERNEL write repeats the value the register already holds."""
    e = _core.Emitter()
    e.set_fields("NACC_CTRL", CONV_MODE=0, POOL_MODE=2, ACT_MODE=0, QUANT_EN=1, BIAS_EN=1,
                 FM_UPD=1, K_UPD=1)
    e.set_fields("NACC_KERNEL", K_SIZE_X=3, K_SIZE_Y=3, K_SIZE_XY=8)
    e.set_fields("NACC_IN_FM", IN_FM_WIDTH=16, IN_FM_HEIGHT=16)
    e.set_fields("NACC_OUT_FM", OUT_FM_WIDTH=14, OUT_FM_HEIGHT=14)
    e.set_fields("NACC_FM_CH", IN_FM_CH=3, OUT_FM_CH=8)
    e.set_fields("NACC_FM_OFFSET", IN_FM_OFFSET=3, OUT_FM_OFFSET=-5)
    e.set_register("NACC_ACT_MIN", -5 & 0xFFFFFFFF)
    e.set_register("NACC_ACT_MAX", 127)
    e.set_register("NACC_IN_K_DMA_ADDR", _core.region_address(0, 0x0000))
    e.set_register("NACC_BIAS_DMA_ADDR", _core.region_address(0, 0x0240))
    e.set_register("NACC_QUANT_MUL_DMA_ADDR", _core.region_address(0, 0x0260))
    e.set_register("NACC_QUANT_SHIFT_DMA_ADDR", _core.region_address(0, 0x0280))
    e.set_register("NACC_IN_FM_DMA_ADDR", _core.region_address(1, 0x0000))
    e.set_register("NACC_OUT_DMA_ADDR", _core.region_address(3, 0x0000))
    e.set_fields("NACC_KERNEL", K_SIZE_X=3, K_SIZE_Y=3, K_SIZE_XY=8)
    e.op("NPU_OP_CONV")
    e.op("NPU_OP_KERNEL_WAIT", 0)
    e.set_register("DMA_SRC", _core.region_address(3, 0x0000))
    e.set_register("DMA_DST", _core.region_address(2, 0x0100))
    e.set_register("DMA_LEN", 8)
    e.op("NPU_OP_DMA_START")
    e.op("NPU_OP_DMA_WAIT", 0)
    e.stop()
    return e


def render_example() -> str:
    e = example_stream()
    return ("```\n" + _core.disassemble(e.words) + "```\n\n"
            f"{len(e.words)} words; the emitter dropped {e.skipped_writes} redundant write(s).\n")


def render_compute_registers() -> str:
    """One line per register of the compute bank: offset, name, what it holds."""
    lines = ["| offset | register | holds |", "|---|---|---|"]
    for r in _core.register_table():
        if r["bank"] == "compute":
            lines.append(f"| {_hex(r['offset'], 4)} | {r['name']} | {_cell(r['description'])} |")
    return "\n".join(lines) + "\n"


_RENDERERS = {"opcodes": render_opcodes, "registers": render_registers, "example": render_example,
              "compute_registers": render_compute_registers}


def render(text: str) -> str:
    """`text` with every generated block replaced by its current content."""

    def replace(m: re.Match) -> str:
        name = m.group("name")
        if name not in _RENDERERS:
            raise ValueError(f"unknown generated block '{name}' (known: {', '.join(_RENDERERS)})")
        return m.group(1) + _RENDERERS[name]() + m.group(4)

    return _BLOCK.sub(replace, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the document is stale")
    parser.add_argument("--path", type=pathlib.Path, action="append",
                        help=f"a document (default: {', '.join(map(str, DOC_PATHS))})")
    args = parser.parse_args(argv)
    stale = 0
    for path in args.path or DOC_PATHS:
        text = path.read_text(encoding="utf-8")
        new = render(text)
        if args.check:
            if new != text:
                print(f"{path} is stale: run python -m nacc.docs_gen", file=sys.stderr)
                stale = 1
        elif new != text:
            path.write_text(new, encoding="utf-8")
            print(f"updated {path}")
    return stale


if __name__ == "__main__":
    sys.exit(main())
