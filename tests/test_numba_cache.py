"""bm25s' numba kernel is compiled once per machine, not once per retrieve process
(reranklab.retrieval.numba_cache): a second process loads it from numba's disk cache, and its
run is the first one's, byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reranklab.io import write_corpus
from reranklab.retrieval.bm25s_backend import Bm25sRetriever
from tests.conftest import tool_env

pytest.importorskip("numba", reason="bm25s' numba backend is not installed")

# One retrieve process: numba scoring on one thread (the serial kernel), the run to a file; says
# whether the kernel came from the disk cache.
RETRIEVE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from bm25s.numba import retrieve_utils
    from reranklab.retrieval.bm25s_backend import Bm25sRetriever

    index, out = Path(sys.argv[1]), Path(sys.argv[2])
    bm25 = Bm25sRetriever({"k1": 0.9, "b": 0.4})
    bm25.scorer, bm25.threads = "numba", 1
    queries = {"q1": "baking bread", "q2": "wet roads at night", "q3": "bread"}
    bm25.search_to_file(index, queries, 3, out, tag="bm25")
    kernels = [retrieve_utils._retrieve_internal_jitted_serial, retrieve_utils._retrieve_internal_jitted_parallel]
    hits = sum(sum(k.stats.cache_hits.values()) for k in kernels)
    misses = sum(sum(k.stats.cache_misses.values()) for k in kernels)
    print(json.dumps({"hits": hits, "misses": misses, "threads": bm25._threads()}))
    """
)


def _retrieve(index: Path, out: Path, cache: Path) -> dict:
    env = {**tool_env(), "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", RETRIEVE, str(index), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_retrieve_process_loads_the_kernel_and_writes_the_same_run(tmp_path):
    corpus = {
        "p1": "baking bread at home",
        "p2": "wet roads at night",
        "p3": "bread and roads",
        "p4": "night baking",
    }
    write_corpus(tmp_path / "corpus.parquet", corpus)
    Bm25sRetriever({"k1": 0.9, "b": 0.4}).build(tmp_path / "corpus.parquet", tmp_path / "index")
    cache = tmp_path / "numba-cache"
    first = _retrieve(tmp_path / "index", tmp_path / "first.run", cache)
    assert first == {"hits": 0, "misses": 1, "threads": 1}  # compiled, and kept in the cache
    assert any(cache.rglob("*.nbi"))
    second = _retrieve(tmp_path / "index", tmp_path / "second.run", cache)
    assert second == {"hits": 1, "misses": 0, "threads": 1}  # loaded: no compile in this process
    assert (tmp_path / "second.run").read_bytes() == (tmp_path / "first.run").read_bytes()
    # The numpy scorer (no numba at all) writes the same run.
    numpy = Bm25sRetriever({"k1": 0.9, "b": 0.4})
    numpy.scorer = "numpy"
    queries = {"q1": "baking bread", "q2": "wet roads at night", "q3": "bread"}
    numpy.search_to_file(tmp_path / "index", queries, 3, tmp_path / "numpy.run", tag="bm25")
    assert (tmp_path / "numpy.run").read_bytes() == (tmp_path / "first.run").read_bytes()
