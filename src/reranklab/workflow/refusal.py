"""A configuration the workflow refuses as it loads, said in one line on the terminal.

Snakemake prints an exception raised while it reads the Snakefile as its class and the Snakefile's
line, then the message, then the last frames of the traceback: four lines or more around the one
that says what is wrong. And it reads the Snakefile's own ``configfile:`` with a message that names
neither the file nor the line ("Config file is not valid JSON or YAML"). The checks the Snakefile
runs as it loads (the YAML of ``params.yaml``, the merged configuration, a collection's files, the
encoder) raise :class:`~reranklab.errors.ReranklabError`, whose message is one line naming the file
and the key or line; :func:`refused` prints that line and stops Snakemake with exit status 1.
``SystemExit`` is what Snakemake lets through untouched, and at that point no job has started and
nothing is locked, so there is nothing to clean up.

Example:
    >>> import contextlib, io
    >>> from reranklab.errors import ConfigError
    >>> said = io.StringIO()
    >>> with contextlib.redirect_stderr(said):
    ...     try:
    ...         with refused():
    ...             raise ConfigError("params.yaml: key seeds: not a list")
    ...     except SystemExit as stop:
    ...         print(stop.code)
    1
    >>> said.getvalue()
    'reranklab: params.yaml: key seeds: not a list\\n'
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reranklab.errors import ReranklabError


@contextmanager
def refused() -> Iterator[None]:
    """Turns a :class:`~reranklab.errors.ReranklabError` into one line on stderr and exit 1."""
    try:
        yield
    except ReranklabError as error:
        print(f"reranklab: {error}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def check_workflow_configfile(path: str | Path, skipped: bool) -> None:
    """Parses the Snakefile's own ``configfile:`` (``params.yaml``) before Snakemake does, so a
    YAML error in it is ``params.yaml:<line>:<column>: invalid YAML: ...``. Only its YAML: its
    keys are checked with the merged configuration, and only where it is used. Read whenever
    Snakemake reads it (also under ``--replace-workflow-config``, which discards it after
    reading); not in a module given its own ``config:`` (``skipped``), and a missing file is
    left to Snakemake's own message.

    Raises:
        ConfigError: the file is not valid YAML, or not UTF-8 text.
    """
    from reranklab.config import parse_config_yaml

    if not skipped and Path(path).is_file():
        parse_config_yaml(path)
