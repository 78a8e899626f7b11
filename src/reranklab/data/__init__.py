"""Datasets: one module per dataset, download specs as data, parsers to canonical form."""

from reranklab.data.base import Dataset, Prepared, Protocol, RawFile
from reranklab.data.registry import dataset_names, get_dataset, register_dataset

__all__ = ["Dataset", "Prepared", "Protocol", "RawFile", "dataset_names", "get_dataset", "register_dataset"]
