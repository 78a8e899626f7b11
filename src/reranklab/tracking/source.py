"""Where a run's results come from: MLflow's source tags (entry point, user, git commit).

MLflow's fluent API sets ``mlflow.source.*`` and ``mlflow.user`` itself; runs created through
:class:`mlflow.MlflowClient` (as reranklab's, see :mod:`reranklab.tracking.mlflow_tracking`)
get none of them, so the UI shows no source and no commit. :func:`source_tags` gives them,
found without failing: outside a git checkout, or without ``git`` on the ``PATH``, the git
tags are simply left out.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import subprocess
from pathlib import Path

SOURCE_NAME = "mlflow.source.name"
SOURCE_TYPE = "mlflow.source.type"
GIT_COMMIT = "mlflow.source.git.commit"
GIT_BRANCH = "mlflow.source.git.branch"
GIT_DIRTY = "mlflow.source.git.dirty"
USER = "mlflow.user"
GIT_TIMEOUT_S = 10.0  # a hung git (network file system...) must not hold a job up


def _git(folder: Path, *args: str) -> str | None:
    """``git -C folder args`` stripped, or None when git is missing, fails or hangs."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},  # read-only: never take index.lock
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_tags(folder: str | os.PathLike[str] = ".") -> dict[str, str]:
    """The git commit, branch and dirty flag of the checkout holding ``folder``.

    Args:
        folder: a folder inside the checkout (the study's working directory).

    Returns:
        ``{"mlflow.source.git.commit": sha, "mlflow.source.git.branch": name,
        "mlflow.source.git.dirty": "true"|"false"}``; ``{}`` outside a git checkout or
        without git (no branch on a detached HEAD).

    Example:
        >>> import tempfile
        >>> git_tags(tempfile.mkdtemp())
        {}
    """
    path = Path(folder)
    commit = _git(path, "rev-parse", "--verify", "--quiet", "HEAD")
    if not commit:
        return {}
    tags = {GIT_COMMIT: commit}
    branch = _git(path, "symbolic-ref", "--quiet", "--short", "HEAD")
    if branch:
        tags[GIT_BRANCH] = branch
    # Tracked files changed since the commit (untracked results/ files do not count).
    status = _git(path, "status", "--porcelain", "--untracked-files=no")
    if status is not None:
        tags[GIT_DIRTY] = "true" if status else "false"
    return tags


def source_tags(entry_point: str, folder: str | os.PathLike[str] = ".") -> dict[str, str]:
    """MLflow's source tags for a run made by ``reranklab <entry_point>``.

    Example:
        >>> tags = source_tags("train")
        >>> tags["mlflow.source.name"], tags["mlflow.source.type"]
        ('reranklab train', 'LOCAL')
    """
    tags = {SOURCE_NAME: f"reranklab {entry_point}", SOURCE_TYPE: "LOCAL"}
    with contextlib.suppress(KeyError, OSError):  # no user name for this uid (some containers)
        tags[USER] = getpass.getuser()
    # Asked each time (a few ms): a long-lived process must not report an old commit.
    return {**tags, **git_tags(Path(folder).absolute())}
