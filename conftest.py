"""pytest's collection: the doctests of a module that needs an optional extra are left out where
the extra is not installed (``reranklab.pyterrier`` needs ``reranklab[pyterrier]``)."""

from __future__ import annotations

import importlib.util

collect_ignore = [] if importlib.util.find_spec("pyterrier") else ["src/reranklab/pyterrier.py"]
