"""``reranklab score``: score run files on a dataset's split under its official protocol (or
another scoring of the dataset), or against a study's own judgements (``--qrels``,
``--prepared``: nothing is downloaded), as text or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from reranklab.cli._options import DATASET

NAME = "score"
HELP = "score run files (TREC or SemEval format) on a dataset's split under its official protocol, or against a study's own qrels (--qrels, --prepared)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset",
        default=None,
        help=f"{DATASET}; with --qrels or --prepared only its scoring is used (nothing is fetched)",
    )
    parser.add_argument(
        "--configfile",
        nargs="+",
        default=None,
        metavar="FILE",
        help="the study's configuration files, for a --dataset that is a collection of one's own "
        "(local.<name>); default: params.yaml here, if there is one",
    )
    parser.add_argument(
        "--split",
        default=None,
        help="train, dev, test, or all (every query): of --dataset, or of --prepared's split.json",
    )
    parser.add_argument(
        "--protocol", default=None, help="a scoring of the dataset (default: its official one)"
    )
    parser.add_argument(
        "--qrels",
        default=None,
        help="score against this TREC qrels file (qid iteration pid grade), e.g. a study's "
        "results/data/<dataset>/qrels.txt: nothing is downloaded",
    )
    parser.add_argument(
        "--prepared",
        default=None,
        metavar="DIR",
        help="score against a study's prepared dataset folder (results/data/<dataset>: its "
        "qrels.txt, and the queries of --split from its split.json); nothing is downloaded",
    )
    parser.add_argument(
        "--queries-from-run",
        action="store_true",
        help="count only the queries each run ranks (as trec_eval without -c), not every "
        "judged query of the qrels or the split",
    )
    parser.add_argument(
        "--relevance",
        type=int,
        default=1,
        help="without --dataset: the smallest grade that counts as relevant (default 1)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON: one object per run (a list for several runs)",
    )
    parser.add_argument(
        "--mirror",
        default=None,
        help="local mirror folder (default: env RERANKLAB_MIRROR, else download)",
    )
    parser.add_argument(
        "--cache",
        default=None,
        help="where raw files are kept (default: env RERANKLAB_CACHE, else ~/.cache/reranklab)",
    )
    _add_ties(parser)
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run files: TREC (qid Q0 pid rank score tag) or SemEval (qid aid rank score label)",
    )


def _add_ties(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tie-seed",
        type=int,
        default=0,
        help="seed of the hash that orders tied scores (default 0)",
    )
    parser.add_argument(
        "--ties",
        choices=("hash", "official", "trec_eval", "file"),
        default="hash",
        help="how tied scores are ordered: hash (default, never by id or file order); official / trec_eval / file "
        "reproduce an official tool's figure on a run with ties (trec_eval: pid descending; file: file order, as the SemEval scorer)",
    )


def _register_local(args: argparse.Namespace) -> None:
    """Make ``--dataset`` known when it is a collection of one's own: its ``local.<name>``
    entry in the study's configuration files (later files win, as Snakemake merges them)."""
    import yaml

    from reranklab.data import dataset_names, get_dataset
    from reranklab.errors import ConfigError, yaml_error

    name = args.dataset
    if not name or name in dataset_names() or name.startswith("irds:"):
        return
    files = args.configfile or (["params.yaml"] if Path("params.yaml").is_file() else [])
    entry = None
    for file in files:
        try:
            document = yaml.safe_load(Path(file).read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise ConfigError(f"--configfile {file}: cannot read it ({exc})") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"--configfile {yaml_error(file, exc)}") from None
        entry = (document.get("local") or {}).get(name, entry)
    if entry is None:
        shown = ", ".join(files) or "none given, and no params.yaml here"
        raise ConfigError(
            f"unknown dataset {name!r}: not a registered one ({', '.join(dataset_names())}), "
            f"nor irds:<id>, nor a local.{name} entry of the configuration files ({shown}): "
            "give the files that define it with --configfile"
        )
    get_dataset(name, local=entry)


def run(args: argparse.Namespace) -> None:
    from reranklab import score
    from reranklab.data import get_dataset
    from reranklab.errors import ConfigError

    _register_local(args)

    if args.qrels or args.prepared:
        results, scoring = _own_judgements(args)
        _print(args, results, scoring)
        return
    if not args.dataset or not args.split:
        raise ConfigError(
            "give --dataset and --split (the dataset's own judgements, fetched), or --qrels FILE "
            "or --prepared DIR (a study's own judgements, nothing fetched)"
        )
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
        queries_from_run=args.queries_from_run,
    )
    _print(args, results, score.resolve_scoring(get_dataset(args.dataset), args.protocol))


def _own_judgements(args: argparse.Namespace) -> tuple[list[Any], Any]:
    """Score against ``--qrels`` / ``--prepared``: the results and the scoring used."""
    from reranklab import score
    from reranklab.data import get_dataset
    from reranklab.errors import ConfigError
    from reranklab.evaluation.protocol import default_scoring
    from reranklab.evaluation.ties import official_rule
    from reranklab.io import read_qrels

    name = args.dataset
    dataset = get_dataset(name) if name else None
    if dataset is None and args.prepared:
        # results/data/wikiqa: WikiQA's own scoring; results/data/<local name>: its entry's.
        dataset = score.prepared_dataset(args.prepared)
        name = dataset.name if dataset else None
    if dataset is not None:
        scoring = score.resolve_scoring(dataset, args.protocol)
    elif args.protocol:
        raise ConfigError("--protocol names a scoring of --dataset: give --dataset too")
    else:
        scoring = default_scoring(args.relevance)
    if args.prepared:
        qids, qrels = score.prepared_judgements(args.prepared, args.split or "all")
        split = args.split or "all"
    elif args.split:
        raise ConfigError(
            "--split with --qrels needs the split's queries: give --prepared results/data/<dataset> "
            "(its split.json), or --queries-from-run"
        )
    else:
        qids, qrels, split = None, {}, "all"
    if args.qrels:
        qrels = read_qrels(args.qrels)
        if qids is None:
            qids = list(qrels)
    if args.queries_from_run:
        qids, split = None, score.RUN_QUERIES
    ties = official_rule(name) if args.ties == "official" and name else args.ties
    results = score.score_with_qrels(
        args.runs,
        qrels,
        qids,
        scoring,
        name=name or str(args.qrels or args.prepared),
        split=split,
        tie_seed=args.tie_seed,
        ties=ties,
    )
    return results, scoring


def _print(args: argparse.Namespace, results: list[Any], scoring: Any) -> None:
    from reranklab import score

    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=2))
        return
    print("\n\n".join(score.format_text(result, scoring) for result in results))
