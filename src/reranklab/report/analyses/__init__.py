"""The seed papers' analyses of a finished study, one module each, every one a report item.

Each analysis reads the study's files (``results/summary.json``, the cells' per-query metrics,
the queries, the fold models' ``train_stats.json``) through :class:`~.study.StudyData` and
writes its figures (PNG) and tables (CSV) for one dataset into ``results/report/<dataset>/``:

============================  ================================================================
module                        what (paper)
============================  ================================================================
:mod:`.method_comparison`     MAP/MRR per cell as bars, the first stage as a line (Mass et al.)
:mod:`.length_sweep`          MAP/MRR against the max length, one line per variant (Mass et al.)
:mod:`.chunking`              chunked against unchunked BERTlets per max length (Mass et al.)
:mod:`.query_delta`           per-query Δ against a base, sorted; by query length and by first
                              question word (MarkedBERT)
:mod:`.training_speed`        batches/s per epoch, full against lite (BERT-DMN, Table 3)
:mod:`.learning_curves`       training loss per step and dev measure per epoch (every study)
:mod:`.ap_distribution`       the distribution of per-query AP per cell (every study)
============================  ================================================================

:func:`~.run.analyze` runs those with something to show for the study's grid (no sweep of one
max length, no chunking table without a chunked cell: :func:`~.outputs.outputs`); ``reranklab
analyze`` is its command.
"""
