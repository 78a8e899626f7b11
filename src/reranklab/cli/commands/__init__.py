"""The commands a person types: tools to start and check a study, list what is registered, score
run files, grade and record results, benchmark and export models.

Each module holds ``NAME``, ``HELP`` (its help line and description), ``add_arguments(parser)``
and ``run(args)``; :data:`COMMANDS` is their order in ``reranklab --help``.
"""

from __future__ import annotations

from reranklab.cli.commands import (
    bench,
    bench_data,
    bench_suite,
    datasets,
    docs_reference,
    encoder_path,
    encoders,
    export,
    init,
    make_tiny_bert,
    record,
    regress,
    score,
    settings_schema,
    status,
    validate_config,
    variants,
)

COMMANDS = (
    regress,
    record,
    score,
    datasets,
    variants,
    init,
    validate_config,
    settings_schema,
    docs_reference,
    encoder_path,
    encoders,
    make_tiny_bert,
    status,
    bench,
    bench_suite,
    bench_data,
    export,
)
"""The command modules, in the order ``reranklab --help`` lists them."""
