"""The documentation a pip user can reach: docs/*.md ship in the package
(nacc/_docs, setup.py's build_py) and `nacc docs` reads them; the generated
tables of docs/hardware.md are current; the texts users see (capability rules,
option tables) cite `nacc docs ...` / `nacc supported-ops`, never the project's
internal spec file or a docs/ path a pip user does not have."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from nacc import _core, docs, docs_gen
from nacc import onnxruntime as nort
from nacc import tflite

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_generated_tables_of_hardware_md_are_current():
    for path in docs_gen.DOC_PATHS:
        text = (ROOT / path).read_text(encoding="utf-8")
        assert docs_gen.render(text) == text, f"{path} is stale: run python -m nacc.docs_gen"


def user_texts():
    """Every rule text and option description a user can be shown."""
    for r in _core.rules_table():
        yield f"rule {r['name']}", r["text"]
    for s in tflite.delegate_option_specs() + nort.provider_option_specs():
        yield f"option {s.name}", f"{s.allowed} {s.help}"


@pytest.mark.parametrize("where,text", list(user_texts()))
def test_user_texts_cite_installed_documents(where, text):
    assert "NACC_SPEC" not in text and "docs/" not in text, (where, text)
    for topic in re.findall(r"nacc docs (\w+)", text):
        assert topic in docs.topics(), (where, topic)


def test_every_cited_topic_exists():
    """`nacc docs TOPIC` in the package's own messages names a shipped document."""
    pkg = ROOT / "python" / "nacc"
    cited = set()
    for f in pkg.glob("*.py"):
        cited |= set(re.findall(r"nacc docs ([a-z_]+)", f.read_text(encoding="utf-8")))
    assert cited and cited <= set(docs.topics()), cited - set(docs.topics())


def test_build_ships_the_docs(tmp_path):
    """setup.py's build_py copies docs/*.md into nacc/_docs of the build."""
    build = tmp_path / "lib"
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)],
                   cwd=ROOT, check=True, capture_output=True, timeout=300)
    shipped = sorted(p.name for p in (build / "nacc" / "_docs").glob("*.md"))
    assert shipped == sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert "hardware.md" in shipped and "cli.md" in shipped


def test_readme_install_and_test_blocks_unchanged():
    """CI runs README's "## Install" and "## Test" code blocks verbatim."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert '## Install\n\n```\npip install ".[test]"\n```' in text
    assert "## Test\n\n```\npython -m pytest\n```" in text
