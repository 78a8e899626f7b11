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
the output of one command. ``--json DIR`` keeps each run's full report (``--reports FILE``: all
of them in one list), and ``--from-json PATH`` makes the table again from either without
measuring (what a run that was stopped half-way left). ``--set KEY=VALUE`` changes a field of
every run (a CPU dry run of the GPU suite: tiny shapes, a few steps); ``--budget-s`` starts no
run after that many seconds (the table says which were not run). The packaged suites
(``reranklab/bench/suites/*.yaml``) are named without a path.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from reranklab.bench.quiet import stdout_to_stderr
from reranklab.bench.settings import BenchSettings
from reranklab.errors import ConfigError, yaml_error
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
    except OSError as error:
        raise ConfigError(f"{path}: {error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(str(yaml_error(path, error))) from None
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


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` items as fields of :class:`BenchSettings` (values read as YAML).

    Raises:
        ConfigError: an item without ``=`` or a key that is no field.

    Example:
        >>> parse_overrides(["device=cpu", "pairs=16", "against=[trainer]", "compile=false"])
        {'device': 'cpu', 'pairs': 16, 'against': ['trainer'], 'compile': False}
    """
    fields = {f.name for f in dataclasses.fields(BenchSettings)}
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in fields - {"mode"}:
            raise ConfigError(f"--set {item!r}: KEY=VALUE with KEY a bench field other than mode")
        overrides[key.strip()] = yaml.safe_load(value)
    return overrides


def run_settings(
    suite: Mapping[str, Any], run: Mapping[str, Any], overrides: Mapping[str, Any] | None = None
) -> BenchSettings:
    """The :class:`BenchSettings` of one run: the suite's defaults, the run's own fields, then
    ``overrides`` (``--set``)."""
    values = {
        **(suite.get("defaults") or {}),
        **{k: v for k, v in run.items() if k != "label"},
        **(overrides or {}),
    }
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
    failed = {r["label"]: r["failed"] for r in reports if "failed" in r}
    reports = [report for report in reports if "failed" not in report]
    if not reports:
        raise ConfigError(f"bench-suite {suite['name']}: no run was measured")
    # The peers in PEER_TITLES' order (a report read back from JSON has its keys sorted).
    named = {name for report in reports for name in report.get("peers", {})}
    peers = sorted(named, key=lambda name: (list(PEER_TITLES) + sorted(named)).index(name))
    unavailable = {k: v for r in reports for k, v in (r.get("peers_unavailable") or {}).items()}
    lines = [*_table_intro(suite, reports[0], unavailable), ""]
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
    measured = {report.get("label") for report in reports}
    for run in suite.get("runs", []):
        label = run["label"]
        if label not in measured:  # failed, past --budget-s, or the process was stopped
            why = f"failed ({failed[label].split(':')[0]})" if label in failed else "not run"
            lines.append("| " + " | ".join([label, why] + ["–"] * (len(header) - 2)) + " |")
    return "\n".join(lines) + "\n"


def _table_intro(
    suite: Mapping[str, Any], first: Mapping[str, Any], unavailable: Mapping[str, str]
) -> list[str]:
    """The lines above the table: what ran on what, and what the numbers are not."""
    settings = first.get("settings") or {}
    encoder = f"`{first['encoder']}`"
    if first.get("weights", "").startswith("random"):
        encoder += f" ({first['weights']})"
    copies = int(settings.get("copies") or 1)
    dataset = f"`{first['dataset']}` pairs" + (f" (each query ×{copies})" if copies > 1 else "")
    when = str(first.get("measured_at") or f"{datetime.now(UTC):%Y-%m-%d}")[:10]
    lines = [
        f"{suite.get('title', suite['name'])}: {encoder}, `{first['variant']}`, "
        f"max length {first['max_length']}, {dataset}; {first['device_name']}, "
        f"torch {first['torch']}, transformers {first['transformers']}; "
        f"measured {when} with `reranklab bench-suite {suite['name']}`."
    ]
    if suite.get("overrides"):
        changed = ", ".join(f"`{k}={v}`" for k, v in suite["overrides"].items())
        lines += ["", f"Every run changed by `--set`: {changed} (not the suite as written)."]
    if unavailable:
        names = ", ".join(
            f"{PEER_TITLES.get(n, n)} ({e.split(':')[0]})" for n, e in unavailable.items()
        )
        lines += ["", f"Peers not measured (their packages do not import here): {names}."]
    if not str(first.get("device", "")).startswith("cuda"):
        lines += ["", f"No GPU numbers: this ran on {first['device_name']}, not on a GPU."]
    return lines


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
    budget_s: float | None = None,
    keep_going: bool = False,
) -> list[dict[str, Any]]:
    """Run every run of ``suite`` (``bench`` = :func:`~reranklab.bench.run.run_bench`).

    Runs not started within ``budget_s`` seconds are left out (logged; the table lists them).
    Each report is written to ``json_dir`` as soon as it is measured, so a stopped suite
    keeps what it measured. With ``keep_going``, a run that fails (out of GPU memory, say) is
    logged and reported as ``{"label", "failed"}``, and the next one runs.
    """
    with tempfile.TemporaryDirectory(prefix="reranklab-bench-weights-") as weights:
        if bench is None:
            from reranklab.bench.run import run_bench

            def bench(settings: BenchSettings) -> dict[str, Any]:
                # One folder of random-initialised weights for all runs: built once, not per run.
                return run_bench(settings, progress=sys.stderr.isatty(), weights_dir=Path(weights))

        return _run_all(suite, bench, json_dir, budget_s, keep_going)


def _run_all(
    suite: Mapping[str, Any],
    bench: Callable[[BenchSettings], dict[str, Any]],
    json_dir: Path | None,
    budget_s: float | None,
    keep_going: bool,
) -> list[dict[str, Any]]:
    from reranklab.bench.report import report_json
    from reranklab.io.atomic import atomic_write_text

    started = time.monotonic()
    reports = []
    for index, run in enumerate(suite["runs"]):
        name, total = suite["name"], len(suite["runs"])
        if budget_s is not None and time.monotonic() - started > budget_s:
            log.warning(
                "bench-suite %s: %s not run (past --budget-s %g)", name, run["label"], budget_s
            )
            continue
        log.info("bench-suite %s: %d/%d %s", name, index + 1, total, run["label"])
        settings = run_settings(suite, run, suite.get("overrides"))
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            report = {"label": run["label"], "measured_at": stamp, **bench(settings)}
        except Exception as error:
            if not keep_going:
                raise
            log.exception("bench-suite %s: %s failed", name, run["label"])
            report = {"label": run["label"], "failed": f"{type(error).__name__}: {error}"[:300]}
            _free_gpu_memory()
        reports.append(report)
        if json_dir is not None:
            slug = re.sub(r"[^a-z0-9]+", "-", run["label"].lower()).strip("-")
            atomic_write_text(
                Path(json_dir) / f"{index:02d}-{slug}.json", report_json(report) + "\n"
            )
    return reports


def _free_gpu_memory() -> None:
    """Give a failed run's cached GPU memory back, so the next run starts as the first did."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def read_reports(path: Path) -> list[dict[str, Any]]:
    """The reports of a suite: a folder that ``--json`` filled, or a file ``--reports`` wrote.

    Raises:
        ConfigError: no report there.
    """
    path = Path(path)
    if path.is_file():
        reports = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(reports, list) or not reports:
            raise ConfigError(f"--from-json: {path} is not a JSON list of reports")
        return reports
    paths = sorted(path.glob("[0-9][0-9]-*.json"))
    if not paths:
        raise ConfigError(f"--from-json: no NN-<label>.json report in {path}")
    return [json.loads(p.read_text(encoding="utf-8")) for p in paths]


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
    parser.add_argument(
        "--set",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="change a field of every run, e.g. --set device=cpu --set pairs=16 (a dry run)",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=None,
        metavar="SECONDS",
        help="start no run after this many seconds (the table lists those not run)",
    )
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="a run that fails (out of GPU memory, say) is logged and the next one runs",
    )
    parser.add_argument(
        "--from-json",
        metavar="PATH",
        help="make the table from the reports of --json DIR or --reports FILE; measure nothing",
    )
    parser.add_argument(
        "--reports", metavar="FILE", help="write all the runs' reports to FILE as one JSON list"
    )


def command(args: argparse.Namespace) -> None:
    """Run a suite, print its table, and update the Markdown file when asked."""
    from reranklab.io.atomic import atomic_write_text

    path = suite_path(args.suite)
    suite = load_suite(path)
    if args.overrides:
        suite = {**suite, "overrides": parse_overrides(args.overrides)}
        for run in suite["runs"]:  # wrong values fail now, not after the first runs
            run_settings(suite, run, suite["overrides"])
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
    if args.from_json:
        reports = read_reports(Path(args.from_json))
    else:
        # stdout carries the table alone: what the peers print while measuring goes to stderr.
        with stdout_to_stderr():
            reports = run_suite(
                suite, json_dir=json_dir, budget_s=args.budget_s, keep_going=args.keep_going
            )
    if args.reports:
        text = json.dumps(reports, indent=2, sort_keys=True, default=str)
        atomic_write_text(args.reports, text + "\n")
    table = suite_table(suite, reports)
    print(table, end="")
    if args.update:
        target = Path(args.update)
        text = replace_section(target.read_text(encoding="utf-8"), suite["name"], table, target)
        atomic_write_text(target, text)
        log.info("bench-suite %s: table written into %s", suite["name"], target)
