"""Opening a study's experiment in the MLflow UI on its runs table (not the GenAI pages).

MLflow 3's UI has two layouts of an experiment: "GenAI apps & agents" (traces, sessions,
judges) and "Machine learning" (the classic runs table, charts and comparisons). Which one it
shows is decided, depending on the UI version, by:

- the experiment tag ``mlflow.experimentKind`` (``custom_model_development`` = machine
  learning, ``genai_development`` = GenAI; an experiment without it is inferred from its
  contents, or the UI asks), which :func:`reranklab.tracking.mlflow_tracking.ensure_experiment`
  sets on the experiments it creates or uses;
- in newer UIs (3.17's, where this was read), a per-browser "workflow type" (``genai`` by
  default, kept in the browser's local storage under ``mlflow.workflowType``) that wins over
  the tag, and that the page's ``workflowType`` query parameter overrides (in the UI bundle,
  ``mlflow/server/js/build/static/js/main.*.js``, the experiment kind is ``workflowType ===
  "genai" ? genai_development : custom_model_development`` while that switch is on, and the
  page opened without a tab redirects a GenAI-kind experiment to its traces).

So the link a study prints names both the runs tab and ``workflowType=machine_learning``:
``<ui>/#/experiments/<id>/runs?workflowType=machine_learning`` opens the runs table in the
machine-learning layout whatever the browser remembers.
"""

from __future__ import annotations

from urllib.parse import urlsplit

EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MACHINE_LEARNING_KIND = "custom_model_development"
WORKFLOW_TYPE = "machine_learning"
DEFAULT_UI = "http://127.0.0.1:5000"  # where `mlflow ui` serves by default


def ui_base(tracking_uri: str) -> str:
    """Where the UI of ``tracking_uri`` is: the server itself for an ``http(s)`` store, else
    the address ``mlflow ui --backend-store-uri <uri>`` serves on by default.

    Example:
        >>> ui_base("sqlite:///results/mlflow.db"), ui_base("https://mlflow.lab:8443/")
        ('http://127.0.0.1:5000', 'https://mlflow.lab:8443')
    """
    parts = urlsplit(tracking_uri)
    if parts.scheme in ("http", "https") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")
    return DEFAULT_UI


def runs_link(tracking_uri: str, experiment_id: str) -> str:
    """The UI page of experiment ``experiment_id``'s runs table (machine-learning layout).

    Example:
        >>> runs_link("sqlite:///results/mlflow.db", "1")
        'http://127.0.0.1:5000/#/experiments/1/runs?workflowType=machine_learning'
    """
    return (
        f"{ui_base(tracking_uri)}/#/experiments/{experiment_id}/runs?workflowType={WORKFLOW_TYPE}"
    )


def ui_command(tracking_uri: str) -> str | None:
    """The command that serves the UI of a local store (``None`` for a tracking server).

    Example:
        >>> ui_command("sqlite:///results/mlflow.db")
        'mlflow ui --backend-store-uri sqlite:///results/mlflow.db --workers 1'
    """
    if urlsplit(tracking_uri).scheme in ("http", "https"):
        return None
    return f"mlflow ui --backend-store-uri {tracking_uri} --workers 1"
