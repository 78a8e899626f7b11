"""Benchmarks. ``reranklab bench``: our training / re-ranking engine against the naive Hugging Face loop.

Both run in one process, on the same pairs of a real collection (``sample`` or WikiQA), with
the same model built from the same seed, the same loss and the same batch size:

* **engine**: what ``reranklab train`` / ``rerank`` run: the plan and loop of
  :func:`~reranklab.training.trainer.train_model` (pairs tokenised once, length-grouped batches padded to their own longest pair, fused AdamW,
  ``training.precision``, micro batches, DataLoader workers) and
  :func:`~reranklab.training.inference.rerank_with_model` (pairs tokenised once, batches of
  ``eval_batch_size`` sorted by length, ``inference_mode``).
* **baseline**: the straightforward loop: examples in a shuffled order, each batch tokenised
  when it comes and padded to ``max_length``, fp32, torch's default AdamW (per-tensor loop on
  CPU, for-each on CUDA), ``no_grad`` scoring of the candidates in their order with the
  training batch size. It tokenises exactly as the engine does, so both compute on the same
  word pieces; the model's attention implementation (SDPA, transformers' default) is shared.

It reports pairs/s, tokens/s (real word pieces, and word pieces computed including padding),
the engine/baseline ratio, and on GPUs the model FLOP utilisation: ``6 N`` FLOPs per real
token for a training step (``2 N`` for scoring), ``N`` the non-embedding parameters, over the
GPU's dense bf16 peak (:data:`~reranklab.bench.report.PEAK_BF16_TFLOPS`). Attention FLOPs are
left out (small at these lengths), so it is a slight under-estimate. Engine training time excludes the one-off
tokenisation (reported apart: the feature cache shares it between jobs); the baseline's
per-batch tokenisation is part of its loop. Re-ranking times include tokenisation for both.

Never call this from a timed test: it measures, it does not check.

The modules: :mod:`~reranklab.bench.settings` (what to run, the options),
:mod:`~reranklab.bench.inputs` (the pairs), :mod:`~reranklab.bench.engines` (the two engines),
:mod:`~reranklab.bench.report` (summaries and the table), :mod:`~reranklab.bench.run`
(``reranklab bench``); :mod:`~reranklab.bench.data` is ``reranklab bench-data`` (the data
steps against their naive versions).
"""

from reranklab.bench.report import format_report, peak_bf16_tflops
from reranklab.bench.run import command, run_bench
from reranklab.bench.settings import BenchSettings, add_arguments

__all__ = [
    "BenchSettings",
    "add_arguments",
    "command",
    "format_report",
    "peak_bf16_tflops",
    "run_bench",
]
