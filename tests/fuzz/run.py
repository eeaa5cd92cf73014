"""CLI entry as a script: python tests/fuzz/run.py --graphs N --seed S --out DIR."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz.cli import main  # noqa: E402

main()
