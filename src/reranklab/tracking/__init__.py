"""Experiment tracking: one MLflow parent run per grid cell, a nested run per fold.

:mod:`reranklab.tracking.mlflow_tracking` imports MLflow only when a cell is tracked.
"""

from reranklab.tracking.mlflow_tracking import cell_key, metric_name, track_cell

__all__ = ["cell_key", "metric_name", "track_cell"]
