"""The workflow steps: one module per subcommand that a Snakemake rule calls (one job each).

A step takes its inputs and outputs as paths and its settings as a typed ``--spec``
(:mod:`reranklab.settings.job`: what :mod:`reranklab.workflow.plan` builds for the rule), so it
can be re-run by hand from the command line Snakemake logged, and Snakemake's params trigger
re-runs exactly the jobs whose spec changed.

Each module holds ``NAME``, ``HELP`` (its description), ``add_arguments(parser)`` and
``run(args)``; :data:`STEPS` is their order on the command line.
"""

from __future__ import annotations

from reranklab.cli.steps import (
    aggregate,
    aggregate_seeds,
    analyze,
    baseline,
    collect_plots,
    download,
    encode,
    evaluate,
    html,
    index,
    prepare,
    rerank,
    retrieve,
    sample,
    split,
    summarize,
    track,
    track_report,
    track_seeds,
    train,
)

STEPS = (
    download,
    prepare,
    index,
    retrieve,
    split,
    sample,
    train,
    encode,
    rerank,
    baseline,
    evaluate,
    aggregate,
    track,
    aggregate_seeds,
    track_seeds,
    summarize,
    analyze,
    track_report,
    collect_plots,
    html,
)
"""The step modules, in the order ``reranklab`` registers them."""

WORKFLOW_STEPS = frozenset(step.NAME for step in STEPS)
"""The subcommands only the workflow's rules call (``reranklab --help`` names them, apart)."""
