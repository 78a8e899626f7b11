"""Measuring prints nothing on stdout: the report (a table, or JSON for ``--json``) is all it carries.

The peers are other libraries' loops, and they print: Hugging Face's ``Trainer`` (and
sentence-transformers' ``CrossEncoderTrainer``, one of its kind) ends ``train()`` by logging its
metrics, which its ``PrinterCallback`` prints, or its ``ProgressCallback`` writes through
``tqdm.write``, on stdout (``{'train_runtime': ...}``). So ``reranklab bench --json | jq`` would
read those lines first. While a bench measures, :func:`stdout_to_stderr` sends whatever Python
prints to stdout to stderr instead, where the progress bars and log lines already go.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Inside the block, ``print`` and anything else writing to ``sys.stdout`` writes to stderr.

    Example:
        >>> import io
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err), stdout_to_stderr():
        ...     print({"train_runtime": "1.0"})
        >>> err.getvalue()
        "{'train_runtime': '1.0'}\\n"
    """
    with contextlib.redirect_stdout(sys.stderr):
        yield
