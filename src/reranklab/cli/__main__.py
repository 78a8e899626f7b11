"""``python -m reranklab.cli``: what torchrun runs for each DDP worker, and the tests' subprocesses."""

from __future__ import annotations

import sys

from reranklab.cli import main

if __name__ == "__main__":
    sys.exit(main())
