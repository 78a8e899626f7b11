"""The typed settings of a study: one model from which the schema, the defaults and the checks come.

- :mod:`~reranklab.settings.base`: sections, field flags, dataset options (a leaf: the dataset
  and variant modules build on it);
- :mod:`~reranklab.settings.training`: the shared ``training`` block;
  :mod:`~reranklab.settings.variant`: a variant's own settings, declared beside the variant;
- :mod:`~reranklab.settings.model`: the whole of ``params.yaml`` (each dataset's protocol and
  options, each variant's settings and the aliases of variants: what is registered is passed in
  by :func:`reranklab.config.study_model`, so this package imports no registry);
  :mod:`~reranklab.settings.errors`: its messages;
- :mod:`~reranklab.settings.sources`: the layering of a cell's settings, lowest priority first;
- :mod:`~reranklab.settings.generate`: the text of ``workflow/schemas/params.schema.yaml``
  (``reranklab settings-schema [--check]``);
- :mod:`~reranklab.settings.cell`: :class:`Cell`, the one place a cell's name is made and read.

A new setting is a field in one of these models (or in a variant's or dataset's settings class);
the schema is then regenerated.
"""

from reranklab.settings.cell import Cell

__all__ = ["Cell"]
