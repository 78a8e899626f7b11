"""What ``reranklab datasets`` shows: every registered dataset, its provenance, protocol and state.

For each dataset: title, source, licence note, citation, counts (from ``stats.json`` once it is
prepared, else the counts the dataset module declares from the papers and official files), the
protocol with its options, which raw files are already here (``<results>/data/<name>/raw/`` or
the mirror, as the file or as the archive that holds it), the download size where the
checksums' sources publish it, and the size on disk of ``<results>/data/<name>/``.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from reranklab.data.base import Dataset, RawFile
from reranklab.data.registry import dataset_names, get_dataset
from reranklab.io import read_json

HERE, MIRROR, MISSING = "raw", "mirror", "missing"


@dataclass
class RawFileState:
    """Where one raw file is: ``raw`` (in ``raw/``), ``mirror``, or ``missing``."""

    name: str
    where: str
    manual: bool = False


@dataclass
class DatasetListing:
    """One dataset as ``reranklab datasets`` reports it."""

    name: str
    title: str
    source: str
    licence: str
    citation: str
    mirror_folder: str
    protocol: dict[str, Any]
    scorings: list[dict[str, Any]]
    counts: dict[str, Any]
    counts_from: str  # "prepared" (stats.json), "declared" (the module), or "unknown"
    raw_files: list[RawFileState] = field(default_factory=list)
    download_bytes: int | None = None  # None when a size is not published
    disk_bytes: int = 0
    data_dir: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def describe(
    dataset: Dataset, results_dir: str | Path = "results", mirror: str | None = None
) -> DatasetListing:
    """The listing of one dataset.

    Args:
        dataset: a registered dataset.
        results_dir: the workflow's results folder (its data lives in ``<results>/data/<name>``).
        mirror: the mirror folder (see :func:`reranklab.data.download.resolve_mirror`), or ``None``.

    Example:
        >>> describe(get_dataset("antique"), "results", "../shared/datasets").raw_files[1]  # doctest: +SKIP
        RawFileState(name='antique-train-queries.txt', where='mirror', manual=False)
    """
    data_dir = Path(results_dir) / "data" / dataset.name
    stats_path = data_dir / "stats.json"
    declared = dict(getattr(dataset, "counts", None) or {})
    if stats_path.is_file():
        counts, counts_from = read_json(stats_path), "prepared"
    elif declared:
        counts, counts_from = declared, "declared"
    else:
        counts, counts_from = {}, "unknown"
    mirror_dir = Path(mirror).expanduser() / dataset.mirror_folder if mirror else None
    return DatasetListing(
        name=dataset.name,
        title=dataset.title,
        source=dataset.source,
        licence=dataset.licence,
        citation=dataset.citation,
        mirror_folder=dataset.mirror_folder,
        protocol=dataset.protocol.as_dict(),
        scorings=[s.as_dict() for s in (dataset.scorings or (dataset.scoring(),))],
        counts=counts,
        counts_from=counts_from,
        # What the default options need: TrecQA's TRAIN file is not "missing" when TRAIN-ALL is used.
        raw_files=[_state(spec, data_dir / "raw", mirror_dir) for spec in dataset.raw_files()],
        download_bytes=download_size(dataset.raw_files()),
        disk_bytes=disk_usage(data_dir),
        data_dir=str(data_dir),
    )


def list_datasets(
    results_dir: str | Path = "results", mirror: str | None = None
) -> list[DatasetListing]:
    """:func:`describe` for every registered dataset, by name.

    Example:
        >>> [d.name for d in list_datasets()][:2]  # doctest: +SKIP
        ['antique', 'insuranceqa']
    """
    return [describe(get_dataset(name), results_dir, mirror) for name in dataset_names()]


def download_size(files: tuple[RawFile, ...]) -> int | None:
    """Bytes to download for ``files`` (an archive counted once), or ``None`` if a size is unknown.

    Example:
        >>> download_size((RawFile("a", "https://x/z.zip", member="a", archive_size=10),
        ...                RawFile("b", "https://x/z.zip", member="b", archive_size=10)))
        10
    """
    total = 0
    archives: set[str] = set()
    for spec in files:
        if spec.url and spec.url.startswith("package:"):
            size = spec.size
        elif spec.member:
            if spec.url in archives:
                continue
            archives.add(spec.url or "")
            size = spec.archive_size
        else:
            size = spec.size
        if size is None:
            return None
        total += size
    return total


def disk_usage(folder: str | Path) -> int:
    """Bytes of the regular files under ``folder`` (0 when it does not exist); links not followed.

    Example:
        >>> disk_usage("results/data/antique")  # doctest: +SKIP
        245183231
    """
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                total += os.path.getsize(path)
    return total


def _state(spec: RawFile, raw_dir: Path, mirror_dir: Path | None) -> RawFileState:
    if (raw_dir / spec.name).is_file():
        return RawFileState(spec.name, HERE, bool(spec.manual))
    if mirror_dir is not None:
        candidates = [mirror_dir / spec.name]
        if spec.url and not spec.url.startswith("package:") and (spec.member or _compressed(spec)):
            candidates.append(mirror_dir / _basename(spec.url))
        if any(path.is_file() for path in candidates):
            return RawFileState(spec.name, MIRROR, bool(spec.manual))
    return RawFileState(spec.name, MISSING, bool(spec.manual))


def _compressed(spec: RawFile) -> bool:
    # A .gz/.bz2 URL for a plain raw file: the mirror may hold the compressed download.
    base = _basename(spec.url or "")
    return base.endswith((".gz", ".bz2")) and not spec.name.endswith((".gz", ".bz2"))


def _basename(url: str) -> str:
    return posixpath.basename(unquote(urlparse(url).path))


# -- text --------------------------------------------------------------------------------------


def human_bytes(n: int | None) -> str:
    """``1536`` → ``'1.5 KiB'``; ``None`` → ``'unknown'``.

    Example:
        >>> human_bytes(93_608_031)
        '89.3 MiB'
    """
    if n is None:
        return "unknown"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_counts(counts: dict[str, Any]) -> str:
    """Flat, readable counts: ``passages 403,666; split train 2,226 / dev 200 / test 200``.

    Example:
        >>> format_counts({"passages": 1000, "split": {"train": 8, "test": 2}})
        'passages 1,000; split train 8 / test 2'
    """
    parts = []
    for key, value in counts.items():
        if isinstance(value, dict):
            inner = " / ".join(
                f"{k} {_number(v)}" for k, v in value.items() if not isinstance(v, (dict, list))
            )
            if inner:
                parts.append(f"{key.replace('_', ' ')} {inner}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(f"{key.replace('_', ' ')} {_number(value)}")
    return "; ".join(parts)


def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def format_protocol(protocol: dict[str, Any]) -> str:
    """One line: first stage, split, negatives, threshold, metrics and options.

    Example:
        >>> format_protocol(get_dataset("msmarco-passage").protocol.as_dict())[:43]
        'first stage bm25 top-1000; split predefined'
    """
    depth = f" top-{protocol['depth']}" if protocol.get("depth") else " (whole pool)"
    text = f"first stage {protocol['first_stage']}{depth}"
    if protocol.get("inject_relevant"):
        text += ", inject relevant"
    text += f"; split {protocol['split']}" + (
        f" ({protocol['folds']} folds)" if protocol["split"] == "cv" else ""
    )
    text += f"; negatives/positive {protocol['negatives_per_positive']}; relevant grade >= {protocol['relevance_threshold']}"
    text += f"; metrics {', '.join(protocol['metrics'])}"
    if protocol.get("options"):
        text += "; options " + ", ".join(f"{k}={v}" for k, v in protocol["options"].items())
    return text


def format_scorings(scorings: list[dict[str, Any]]) -> list[str]:
    """One line per scoring protocol, the default (official) first.

    Example:
        >>> format_scorings(describe(get_dataset("trecqa")).scorings)[0][:60]
        'clean (default): DEV and TEST questions with a positive and '
    """
    lines = []
    for index, scoring in enumerate(scorings):
        measures = ", ".join(
            m["name"] + (f" (grade >= {m['rel']})" if m.get("rel") else "")
            for m in scoring["measures"]
        )
        default = " (default)" if index == 0 else ""
        lines.append(
            f"{scoring['name']}{default}: {scoring['description']}; queries {scoring['queries']}, "
            f"relevant grade >= {scoring['relevance']}; {measures}; source: {scoring['source']}"
        )
    return lines


def format_raw(listing: DatasetListing) -> str:
    """``5 of 5 present (raw/ 0, mirror 5)`` plus the missing files and the download size.

    Example:
        >>> format_raw(describe(get_dataset("antique")))  # doctest: +SKIP
        '0 of 5 present (raw/ 0, mirror 0); missing: ...; full download 90.2 MiB'
    """
    total = len(listing.raw_files)
    here = sum(1 for f in listing.raw_files if f.where == HERE)
    mirrored = sum(1 for f in listing.raw_files if f.where == MIRROR)
    text = f"{here + mirrored} of {total} present (raw/ {here}, mirror {mirrored})"
    missing = [f for f in listing.raw_files if f.where == MISSING]
    if missing:
        names = ", ".join(f.name + (" [manual: licence]" if f.manual else "") for f in missing)
        text += f"; missing: {names}"
    return text + f"; full download {human_bytes(listing.download_bytes)}"


def format_listing(listings: list[DatasetListing]) -> str:
    """The text ``reranklab datasets`` prints: one block per dataset.

    Example:
        >>> print(format_listing(list_datasets()))  # doctest: +SKIP
        antique  ANTIQUE: non-factoid questions from Yahoo! Answers, ...
    """
    blocks = []
    for item in listings:
        counts = format_counts(item.counts) or "unknown until prepared"
        where = {
            "prepared": "from stats.json",
            "declared": "papers / official files, not yet prepared",
        }.get(item.counts_from, "")
        lines = [
            f"{item.name}  {item.title}",
            f"  source:    {item.source}",
            f"  licence:   {item.licence}",
            f"  citation:  {item.citation}",
            f"  protocol:  {format_protocol(item.protocol)}",
            *(f"  scoring:   {line}" for line in format_scorings(item.scorings)),
            f"  counts:    {counts}" + (f" ({where})" if where else ""),
            f"  raw files: {format_raw(item)}",
            f"  on disk:   {human_bytes(item.disk_bytes)} in {item.data_dir}",
        ]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
