"""A variant's settings, declared beside the variant (like ir_measures' ``SUPPORTED_PARAMS``).

Each variant module declares one small :class:`VariantSettings` subclass whose defaults are its
paper's values. A field is either

- the variant's own setting (``episodes``, ``chunks``, ...): it becomes a key of the ``training``
  block (and of ``variants.<name>``), and the schema's text ("dmn, dmn_lite only ... null = the
  variant's default (4)") is generated from it; or
- a shared training setting the paper fixes (monoBERT's ``learning_rate: 3e-6``): the same
  key as in the shared block, another default.

A default of ``None`` means "read by the variant, not fixed by its paper": the shared block's
value applies (``embeddings_path``, ``query_max_length``). The other defaults form the variant's
*preset*, the layer between the shared ``training`` block and ``variants.<name>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import Self

from reranklab.settings.base import loose, takes_null
from reranklab.settings.errors import config_error


class VariantSettings(BaseModel):
    """The settings a variant reads, with its paper's values as defaults.

    Example:
        >>> from pydantic import Field
        >>> class DmnHead(VariantSettings):
        ...     episodes: int = Field(4, ge=1, description="passes of the episodic memory")
        ...     learning_rate: float = 3e-5
        >>> DmnHead.preset()
        {'episodes': 4, 'learning_rate': 3e-05}
        >>> DmnHead.from_training({"episodes": None, "learning_rate": 0.001}).episodes
        4
        >>> DmnHead.from_training({"episodes": "four", "learning_rate": 0.001})
        Traceback (most recent call last):
        ...
        reranklab.errors.ConfigError: training.episodes: expected an integer >= 1, got 'four'
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    @classmethod
    def preset(cls) -> dict[str, Any]:
        """The paper's values: every field whose default is not None (a nested block as written,
        so that ``{"measure": "MAP"}`` merges key by key into the user's ``validation``)."""
        out: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            default = field.get_default(call_default_factory=True)
            if isinstance(default, BaseModel):
                out[name] = default.model_dump(exclude_unset=True)
            elif default is not None:
                out[name] = default
        return out

    @classmethod
    def from_training(cls, training: Mapping[str, Any]) -> Self:
        """The variant's settings from a resolved ``training`` block.

        A null keeps the paper's value, unless the field itself takes null (where null has a
        meaning of its own, e.g. ``chunk_length: null`` = the cell's max length). An explicit 0
        is a value like any other. Types are checked, ranges are the config's (:func:`loose`).

        Raises:
            ConfigError: a value of the wrong type (the key is named).
        """
        values = {
            name: training[name]
            for name, field in cls.model_fields.items()
            if name in training and (training[name] is not None or takes_null(field.annotation))
        }
        try:
            return loose(cls).model_validate(values)
        except ValidationError as exc:
            raise config_error(exc, cls, where=("training",)) from None
