"""The JSON schema of ``params.yaml``, generated from the settings model (like Vizro's ``generate.py``).

``workflow/schemas/params.schema.yaml`` (:data:`reranklab.resources.SCHEMA`, shipped
in the package, where the CLI writes it) is generated output: JSON Schema draft 2020-12, every
block closed (``additionalProperties: false``), a description and a default on every key.
Snakemake, editors and other tools read it; ``tests/test_settings.py`` fails when the committed
file drifts. Usage::

    reranklab settings-schema           # write it
    reranklab settings-schema --check   # exit 1 when the committed file is out of date
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

COMMAND = "reranklab settings-schema"
HEADER = f"""\
# GENERATED from the settings model (src/reranklab/settings/): do not edit by hand.
# Regenerate after changing a setting:  {COMMAND}
# Check that it is up to date:          {COMMAND} --check
"""
DRAFT = "https://json-schema.org/draft/2020-12/schema"
DESCRIPTION = (
    "The configuration of a reranklab study (params.yaml, plus override files). "
    "Every key is checked before any job runs; unknown keys are errors."
)


class _Generator(GenerateJsonSchema):
    """pydantic's JSON Schema, written as a person would: ``type: [integer, "null"]`` for a
    nullable value (not ``anyOf``), no generated titles."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        kind = inner.get("type")
        if isinstance(kind, str) and "anyOf" not in inner and "$ref" not in inner:
            out = {**inner, "type": [kind, "null"]}
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
            if "const" in out:
                out["enum"] = [out.pop("const"), None]
            return out
        if "anyOf" in inner:
            return {**inner, "anyOf": [*inner["anyOf"], {"type": "null"}]}
        return {"anyOf": [inner, {"type": "null"}]}

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _untitled(node: Any) -> Any:
    # Models get their class name as a title; the schema's keys are what a reader needs.
    if isinstance(node, dict):
        return {
            key: (
                {k: _untitled(v) for k, v in value.items()}
                if key in ("properties", "$defs")
                else _untitled(value)
            )
            for key, value in node.items()
            if key != "title"
        }
    if isinstance(node, list):
        return [_untitled(item) for item in node]
    return node


def _described(schema: dict[str, Any]) -> dict[str, Any]:
    # pydantic leaves out a block's description where it is its model's: every key keeps one.
    defs = schema.get("$defs", {})
    for node in [schema, *defs.values()]:
        for prop in node.get("properties", {}).values():
            target = defs.get(str(prop.get("$ref", "")).rpartition("/")[2], {})
            if "description" not in prop and "description" in target:
                prop["description"] = target["description"]
    return schema


def generate(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``params.yaml`` (``model``: :func:`reranklab.config.study_model`)."""
    schema = _described(_untitled(model.model_json_schema(schema_generator=_Generator)))
    head = {"$schema": DRAFT, "title": "reranklab study parameters", "description": DESCRIPTION}
    order = ("type", "additionalProperties", "properties", "$defs")
    return {**head, **{key: schema[key] for key in order if key in schema}}


def render(model: type[BaseModel]) -> str:
    """The schema file's text: the header, then the schema as YAML."""
    body = yaml.safe_dump(generate(model), sort_keys=False, allow_unicode=True, width=100)
    return HEADER + body


def out_of_date(path: Path, model: type[BaseModel]) -> str | None:
    """Why the schema file at ``path`` is not :func:`render`'s text, or ``None`` when it is.

    Example:
        >>> out_of_date(Path("missing.yaml"), model)  # doctest: +SKIP
        'missing.yaml is out of date, run `reranklab settings-schema` to update it'
    """
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    return (
        None if current == render(model) else f"{path} is out of date, run `{COMMAND}` to update it"
    )
