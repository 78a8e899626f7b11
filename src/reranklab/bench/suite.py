"""``reranklab bench-suite``: a list of ``reranklab bench`` runs kept as data, one Markdown table.

A suite file (YAML) names the runs and what they share; each run is a set of
:class:`~reranklab.bench.settings.BenchSettings` fields::

    name: gpu
    title: GPU, bert-base, WikiQA, max length 256
    defaults: {variant: pointwise, max_length: 256, device: cuda, encoder: bert-base-uncased}
    runs:
      - {label: train batch 32, mode: train, batch_size: 32, against: [trainer, crossencoder]}
      - {label: re-rank batch 512, mode: rerank, eval_batch_size: 512}

``reranklab bench-suite gpu --update BENCHMARKS.md`` runs them one after the other and puts the
table between the file's ``<!-- bench-suite:gpu:start -->`` and ``<!-- bench-suite:gpu:end -->``
lines (atomically; the rest of the file is left as it is), so the numbers in BENCHMARKS.md are
the output of one command. ``--json DIR`` keeps each run's full report. The packaged suites
(``reranklab/bench/suites/*.yaml``) are named without a path.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from reranklab.bench.settings import BenchSettings
from reranklab.errors import ConfigError
from reranklab.io import markers

log = logging.getLogger(__name__)

SUITES = Path(__file__).with_name("suites")
PEER_TITLES = {"trainer": "HF `Trainer`", "crossencoder": "`CrossEncoder`"}


def suite_path(name: str) -> Path:
    """A suite file: a path, or the name of a packaged suite (``gpu``, ``cpu``).

    Example:
        >>> suite_path("gpu").name
        'gpu.yaml'
    """
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return path
    packaged = SUITES / f"{name}.yaml"
    if not packaged.is_file():
        known = ", ".join(sorted(p.stem for p in SUITES.glob("*.yaml")))
        raise ConfigError(f"bench-suite: no suite {name!r} (packaged: {known}; or a .yaml path)")
    return packaged


def load_suite(path: Path) -> dict[str, Any]:
    """Read a suite and check each run's fields against :class:`BenchSettings`.

    Raises:
        ConfigError: naming the file and the run (index and label) that is wrong.
    """
    try:
        suite = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: {error}") from None
    if not isinstance(suite, dict) or not isinstance(suite.get("runs"), list) or not suite["runs"]:
        raise ConfigError(f"{path}: a suite needs a non-empty 'runs' list")
    if not re.fullmatch(r"[a-z0-9_-]+", str(suite.get("name", ""))):
        raise ConfigError(f"{path}: 'name' must be lower-case letters, digits, - or _")
    fields = {f.name for f in dataclasses.fields(BenchSettings)}
    defaults = suite.get("defaults") or {}
    for index, run in enumerate(suite["runs"]):
        label = run.get("label", "no label") if isinstance(run, dict) else repr(run)
        where = f"{path}: runs[{index}] ({label})"
        if not isinstance(run, dict) or "label" not in run:
            raise ConfigError(f"{where}: each run is a mapping with a 'label'")
        unknown = sorted((set(defaults) | set(run)) - {"label"} - fields)
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")
        try:
            run_settings(suite, run)
        except TypeError as error:
            raise ConfigError(f"{where}: {error}") from None
    return suite


def run_settings(suite: Mapping[str, Any], run: Mapping[str, Any]) -> BenchSettings:
    """The :class:`BenchSettings` of one run: the suite's defaults, then the run's own fields."""
    values = {**(suite.get("defaults") or {}), **{k: v for k, v in run.items() if k != "label"}}
    values["against"] = tuple(values.get("against") or ())
    return BenchSettings(**values)


def _number(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def suite_table(suite: Mapping[str, Any], reports: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown section of a suite's reports: what ran where, then one row per run.

    Columns: the run's label and precision, the engine's pairs/s, tokens/s, padding and model
    FLOP utilisation (GPU only), each peer's pairs/s and the engine's ratio to it.

    Example:
        >>> report = {"mode": "rerank", "device_name": "cpu", "torch": "2", "transformers": "5",
        ...     "encoder": "m", "dataset": "sample", "max_length": 64, "variant": "pointwise",
        ...     "engine": {"pairs_per_s": 50.0, "tokens_per_s": 3000.0, "padding_fraction": 0.1,
        ...     "mfu": None, "precision": "fp32"}, "peers": {}, "ratios": {}}
        >>> print(suite_table({"name": "x", "title": "T"}, [report]).splitlines()[-1])
        | rerank | fp32 | 50.0 | 3,000 | 10 % | – |
    """
    peers = list(dict.fromkeys(name for report in reports for name in report.get("peers", {})))
    first = reports[0]
    lines = [
        f"{suite.get('title', suite['name'])}: `{first['encoder']}`, `{first['variant']}`, "
        f"max length {first['max_length']}, `{first['dataset']}` pairs; {first['device_name']}, "
        f"torch {first['torch']}, transformers {first['transformers']}; "
        f"measured {datetime.now(UTC):%Y-%m-%d} with `reranklab bench-suite {suite['name']}`.",
        "",
    ]
    header = ["run", "precision", "engine pairs/s", "tokens/s", "padding", "MFU"]
    for name in peers:
        header += [
            f"{PEER_TITLES.get(name, name)} pairs/s",
            f"engine / {PEER_TITLES.get(name, name)}",
        ]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|")
    for report in reports:
        engine = report["engine"]
        padding = engine.get("padding_fraction")
        row = [
            str(report.get("label", report["mode"])),
            str(engine.get("precision", "")),
            _number(engine["pairs_per_s"]),
            _number(engine["tokens_per_s"], 0),
            "–" if padding is None else f"{100 * padding:.0f} %",
            "–" if engine.get("mfu") is None else f"{100 * engine['mfu']:.1f} %",
        ]
        for name in peers:
            peer = report.get("peers", {}).get(name)
            ratio = report.get("ratios", {}).get(name)
            row += [
                "–" if peer is None else _number(peer["pairs_per_s"]),
                "–" if ratio is None else f"{ratio:.2f}×",
            ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def replace_section(text: str, name: str, section: str, source: object = "file") -> str:
    """``text`` with the lines between the suite's start and end markers replaced by ``section``.

    Raises:
        ConfigError: the markers are missing or out of order.

    Example:
        >>> doc = "a\\n<!-- bench-suite:x:start -->\\nold\\n<!-- bench-suite:x:end -->\\nb\\n"
        >>> print(replace_section(doc, "x", "new\\n"), end="")
        a
        <!-- bench-suite:x:start -->
        new
        <!-- bench-suite:x:end -->
        b
    """
    return markers.replace_section(text, f"bench-suite:{name}", section, source)


def run_suite(
    suite: Mapping[str, Any],
    bench: Callable[[BenchSettings], dict[str, Any]] | None = None,
    json_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Run every run of ``suite`` (``bench`` = :func:`~reranklab.bench.run.run_bench`)."""
    if bench is None:
        from reranklab.bench.run import run_bench

        def bench(settings: BenchSettings) -> dict[str, Any]:
            return run_bench(settings, progress=sys.stderr.isatty())

    from reranklab.bench.report import report_json
    from reranklab.io.atomic import atomic_write_text

    reports = []
    for index, run in enumerate(suite["runs"]):
        log.info(
            "bench-suite %s: %d/%d %s", suite["name"], index + 1, len(suite["runs"]), run["label"]
        )
        report = {"label": run["label"], **bench(run_settings(suite, run))}
        reports.append(report)
        if json_dir is not None:
            slug = re.sub(r"[^a-z0-9]+", "-", run["label"].lower()).strip("-")
            atomic_write_text(
                Path(json_dir) / f"{index:02d}-{slug}.json", report_json(report) + "\n"
            )
    return reports


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``reranklab bench-suite``."""
    parser.add_argument("suite", help="a packaged suite (gpu, cpu) or a suite .yaml file")
    parser.add_argument(
        "--update",
        metavar="MARKDOWN",
        help="write the table between the suite's markers in this file (e.g. BENCHMARKS.md)",
    )
    parser.add_argument(
        "--json", dest="json_dir", metavar="DIR", help="keep each run's report here"
    )
    parser.add_argument(
        "--only", metavar="LABEL", action="append", default=[], help="run only these labels"
    )


def command(args: argparse.Namespace) -> None:
    """Run a suite, print its table, and update the Markdown file when asked."""
    from reranklab.io.atomic import atomic_write_text

    path = suite_path(args.suite)
    suite = load_suite(path)
    if args.only:
        missing = set(args.only) - {run["label"] for run in suite["runs"]}
        if missing:
            raise ConfigError(f"{path}: no run labelled {', '.join(sorted(missing))}")
        suite = {**suite, "runs": [run for run in suite["runs"] if run["label"] in args.only]}
    if args.update and not Path(args.update).is_file():
        raise ConfigError(f"--update: {args.update} does not exist")
    if args.update:  # fail on missing markers before hours of measuring, not after
        replace_section(
            Path(args.update).read_text(encoding="utf-8"), suite["name"], "", args.update
        )
    json_dir = Path(args.json_dir) if args.json_dir else None
    if json_dir is not None:
        json_dir.mkdir(parents=True, exist_ok=True)
    table = suite_table(suite, run_suite(suite, json_dir=json_dir))
    print(table, end="")
    if args.update:
        target = Path(args.update)
        text = replace_section(target.read_text(encoding="utf-8"), suite["name"], table, target)
        atomic_write_text(target, text)
        log.info("bench-suite %s: table written into %s", suite["name"], target)
