"""``reranklab <command>``: the command line, one subcommand per step of the DAG (each Snakemake
rule calls one) plus the commands a person types.

The help the parser prints is :data:`DESCRIPTION` (plain text); this docstring is for readers of
the code. The subcommands live one per module: :mod:`reranklab.cli.steps` holds the workflow
steps, :mod:`reranklab.cli.commands` the rest, :mod:`reranklab.cli._options` the options they
share. This module builds the parser from them and runs one, saying an error once.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import textwrap
from collections.abc import Sequence
from types import ModuleType

from reranklab.cli.commands import COMMANDS
from reranklab.cli.steps import STEPS, WORKFLOW_STEPS
from reranklab.errors import ReranklabError
from reranklab.logs import setup_logging

__all__ = ["DESCRIPTION", "WORKFLOW_STEPS", "build_parser", "main"]

DESCRIPTION = """\
reranklab: BERT passage re-ranking studies for (non-factoid) QA, from raw data to results.

Each step of the study's Snakemake DAG is one subcommand: it takes its inputs and outputs as
paths and its settings as a typed --spec (JSON, or @file.json: what its rule passes), so a
step can be re-run by hand from the command line Snakemake logged. The other subcommands are tools
for users: start a study (init), check its configuration (validate-config), list what is
registered (datasets, variants), score run files (score), grade results (regress).

Start a study from an installed package:
  reranklab init my-study && cd my-study
  snakemake --cores 2 --resources gpu=1 --configfile config/quickstart.yaml

'reranklab <step> --help' describes a step's options.
"""

_FORMATTER = argparse.RawDescriptionHelpFormatter


def build_parser() -> argparse.ArgumentParser:
    """The ``reranklab`` parser: the workflow steps, then the commands a person types."""
    from reranklab import __version__

    parser = argparse.ArgumentParser(
        prog="reranklab", description=DESCRIPTION, formatter_class=_FORMATTER
    )
    parser.add_argument("--version", action="version", version=f"reranklab {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="debug log lines; tracebacks of errors"
    )
    parser.epilog = textwrap.fill(
        "Workflow steps, run by the Snakemake rules (one job each; reranklab <step> --help "
        f"shows its arguments): {', '.join(sorted(WORKFLOW_STEPS))}.",
        width=88,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="<command>")
    # A workflow step gets no help line: `reranklab --help` lists what a person types and names
    # the steps in its epilog.
    for step in STEPS:
        _register(sub, step, listed=False)
    for command in COMMANDS:
        _register(sub, command, listed=True)
    return parser


def _register(sub: argparse._SubParsersAction, module: ModuleType, listed: bool) -> None:
    """Add the subcommand of ``module`` (its ``NAME``, ``HELP``, ``add_arguments`` and ``run``)."""
    # The formatter keeps descriptions as written (the top one has its own lines): wrap here.
    description = textwrap.fill(module.HELP, width=88)
    help_line = {"help": module.HELP} if listed else {}
    parser = sub.add_parser(
        module.NAME, description=description, formatter_class=_FORMATTER, **help_line
    )
    parser.set_defaults(func=module.run)
    module.add_arguments(parser)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``reranklab <step>``; an error is said once, on stderr, and the exit status is 2.

    Example:
        >>> main(["validate-config", "no-such.yaml"])  # doctest: +SKIP
        reranklab validate-config: error: config file no-such.yaml does not exist
        2
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # a DDP job re-runs its own command line under torchrun
    setup_logging(args.verbose)
    try:
        args.func(args)
    except (ReranklabError, OSError) as exc:
        if args.verbose:  # the traceback, for a bug report
            raise
        # One line, as argparse words its own errors (no log record repeating it): in a rule's
        # log it is the last line, on a terminal the only one.
        print(f"reranklab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        if args.verbose:
            raise
        # Ctrl-C, or SIGTERM turned into it (Snakemake stopping a job, scancel): the job's log
        # ends with one line, and the exit status is the shell's for that signal (128 + n).
        signum = _signal_of(exc)
        print(f"reranklab {args.command}: stopped by signal {signum.name}", file=sys.stderr)
        return 128 + signum
    finally:
        # A step names its job for the progress lines; main() called in-process (tests, a
        # notebook) must not leave that name to the next call.
        from reranklab.progress import set_job

        set_job(None)
    return 0


def _signal_of(interrupt: KeyboardInterrupt) -> signal.Signals:
    """The signal a KeyboardInterrupt stands for: the one its message names ("stopped by signal
    SIGTERM", as the train step raises it), else SIGINT (Ctrl-C)."""
    named = re.search(r"\bsignal (SIG[A-Z0-9]+)\b", str(interrupt))
    if named and named.group(1) in signal.Signals.__members__:
        return signal.Signals[named.group(1)]
    return signal.SIGINT
