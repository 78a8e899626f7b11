"""Grading: how a recorded study becomes verdicts.

The reproduction matrix (published, external and expected numbers against a study's summary:
``matrix_file`` reads the entries, ``matrix`` grades them), the papers' claims (``claim_file``
reads ``studies/claims.yaml``, ``claims`` grades each one with the paired tests of
``claim_tests``), the statistics they rest on (``significance``, ``power``, ``robustness``,
``seed_test``) and the gates a cell must pass before its claims are decided (``learning``: did
its loss fall; ``learned``: is it above its first stage). ``evidence`` reads a record or a run's
files into one object. Rendering (tables, Markdown, HTML) lives in :mod:`reranklab.report`.
"""
