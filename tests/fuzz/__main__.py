"""CLI: python -m tests.fuzz (or python tests/fuzz/run.py)."""
from .cli import main

main()
