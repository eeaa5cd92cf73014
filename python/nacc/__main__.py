"""`python -m nacc ...` is the `nacc` command (nacc.cli), for environments
where the console script is not on PATH."""
import sys

from nacc.cli import main

sys.exit(main())
