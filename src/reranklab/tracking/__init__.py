"""Experiment tracking: one MLflow parent run per grid cell, a nested run per fold.

A fold's run is logged by its training job while it trains (:mod:`reranklab.tracking.live`)
and completed by the cell's ``track`` job (:mod:`reranklab.tracking.mlflow_tracking`), which
finds it by its tags (:mod:`reranklab.tracking.tags`). MLflow is imported only when a run is
logged.
"""

from reranklab.tracking.mlflow_tracking import cell_key, metric_name, track_cell

__all__ = ["cell_key", "metric_name", "track_cell"]
