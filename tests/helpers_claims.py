"""One claim for the claim tests: a `better` claim of paper p, A beats BM25 on dataset d's MAP,
with any key overridden."""

from __future__ import annotations

from typing import Any

from reranklab.grading.claim_file import Claim


def claim_mapping(**overrides: Any) -> dict[str, Any]:
    """The claim as claims.yaml holds it."""
    raw = {
        "id": "p/x",
        "paper": "p",
        "claim": "A beats B",
        "source": "stated",
        "cite": "papers/p.txt:1",
        "kind": "better",
        "dataset": "d",
        "measure": "MAP",
        "a": "a",
        "b": "bm25",
    }
    raw.update(overrides)
    return raw


def make_claim(**overrides: Any) -> Claim:
    return Claim.from_mapping(claim_mapping(**overrides), "test claim")
