"""The project's documentation for an installed nacc (``nacc docs [TOPIC]``).

The Markdown files of the repository's ``docs/`` folder are shipped in the
package as ``nacc/_docs/*.md`` (setup.py copies them at build time), so a pip
user has the hardware reference (``nacc docs hardware``), the CLI guide and
the delegate / EP guides that messages point to. In a source tree without a
build (``PYTHONPATH=python``) the repository's ``docs/`` folder is read.
"""
from __future__ import annotations

import os
from typing import List

__all__ = ["docs_dir", "topics", "read", "index"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_CANDIDATES = (os.path.join(_HERE, "_docs"), os.path.join(_HERE, os.pardir, os.pardir, "docs"))


def docs_dir() -> str:
    """The directory holding the documentation. Raises FileNotFoundError."""
    for d in _CANDIDATES:
        if os.path.isfile(os.path.join(d, "hardware.md")):
            return os.path.abspath(d)
    raise FileNotFoundError("this nacc installation has no documentation (nacc/_docs); "
                            "reinstall nacc (pip install .) from a source tree")


def topics() -> List[str]:
    """Document names (file names without .md), sorted."""
    return sorted(f[:-3] for f in os.listdir(docs_dir()) if f.endswith(".md"))


def _title(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# "):
                return line[2:].strip()
    return ""


def index() -> str:
    """The list of documents with their titles."""
    d = docs_dir()
    lines = [f"nacc documentation ({d}); `nacc docs TOPIC` prints one:", ""]
    for t in topics():
        lines.append(f"  {t:<20} {_title(os.path.join(d, t + '.md'))}")
    return "\n".join(lines)


def read(topic: str) -> str:
    """The text of document `topic` ("hardware", "cli", "supported_ops", ...).
    Raises ValueError for an unknown topic."""
    name = topic[:-3] if topic.endswith(".md") else topic
    name = name.replace("-", "_")
    known = topics()
    if name not in known:
        raise ValueError(f"no document {topic!r}; known: {', '.join(known)}")
    with open(os.path.join(docs_dir(), name + ".md"), encoding="utf-8") as f:
        return f.read()
