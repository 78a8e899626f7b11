"""``reranklab init DIR``: a new study folder that runs the workflow shipped in the package.

The folder gets a ``Snakefile`` that includes the installed workflow (whose Snakefile reads
``params.yaml``), and what a checkout has at its top: ``params.yaml``, the override files of ``config/`` with their
README, the papers' studies under ``studies/`` (each paper's study file, the reproduction matrix,
the claims and the recorded results they are graded against: ``snakemake --configfile
studies/bertdmn2021.yaml``, ``reranklab regress``), and the SLURM profile under
``profiles/slurm/`` (to edit for a cluster). The rules, the schema, the Conda environment and
the steps stay in the package, so upgrading reranklab upgrades the workflow; the
folder holds only the study's own settings and, once run, its ``results/``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from reranklab.errors import ReranklabError
from reranklab.io import atomic_path
from reranklab.resources import PROFILES, STUDY


def study_files() -> list[tuple[Path, Path]]:
    """(source in the package, path inside the new folder) of every file ``init`` writes.

    Example:
        >>> sorted(str(target) for _, target in study_files())[:3]
        ['Snakefile', 'config/README.md', 'config/allvariants-wikiqa.yaml']
    """
    files = [
        STUDY / "Snakefile",
        STUDY / "params.yaml",
        *sorted((STUDY / "config").glob("*")),
        *sorted((STUDY / "studies").glob("**/*")),
    ]
    pairs = [(source, source.relative_to(STUDY)) for source in files if source.is_file()]
    profiles = sorted(path for path in PROFILES.glob("*/*") if path.is_file())
    return pairs + [
        (source, Path("profiles") / source.relative_to(PROFILES)) for source in profiles
    ]


def init_study(directory: str | os.PathLike[str], force: bool = False) -> list[Path]:
    """Write a new study folder: ``Snakefile``, ``params.yaml``, ``config/``, ``studies/``,
    ``profiles/``.

    Args:
        directory: the folder (created if missing; may already hold other files).
        force: replace files of the same names (the study's settings are lost).

    Returns:
        The files written, relative to ``directory``.

    Raises:
        ReranklabError: a file would be replaced without ``force`` (nothing is written then),
            or the package lacks its study templates.

    Example:
        >>> written = init_study(tmp / "my-study")  # doctest: +SKIP
        >>> [str(path) for path in written][:2]  # doctest: +SKIP
        ['Snakefile', 'params.yaml']
    """
    root = Path(directory)
    pairs = study_files()
    if not any(target == Path("Snakefile") for _, target in pairs):
        raise ReranklabError(
            f"the package lacks its study templates ({STUDY}): reinstall reranklab"
        )
    existing = [str(target) for _, target in pairs if (root / target).exists()]
    if existing and not force:
        raise ReranklabError(
            f"{root}: would replace {', '.join(existing)} (pass --force to replace them)"
        )
    for source, target in pairs:
        _copy(source, root / target)
    return [target for _, target in pairs]


def _copy(source: Path, target: Path) -> None:
    # Whole or not at all: a copy killed midway leaves no half-written params.yaml.
    with atomic_path(target) as temporary:
        shutil.copyfile(source, temporary)
