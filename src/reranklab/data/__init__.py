"""Datasets: one module per dataset, download specs as data, parsers to canonical form.

The examples in the dataset modules read the raw files of a real download (``raw/<dataset>/``,
up to gigabytes), so they are skipped as doctests; ``tests/test_data_*.py`` run the same
functions on fixtures, and on the real files with ``-m mirror``. The helpers' examples
(``_text_files``, ``_parsing``) build their tiny files and run.
"""

from reranklab.data.base import Dataset, Prepared, Protocol, RawFile
from reranklab.data.registry import dataset_names, get_dataset, register_dataset

__all__ = [
    "Dataset",
    "Prepared",
    "Protocol",
    "RawFile",
    "dataset_names",
    "get_dataset",
    "register_dataset",
]
