"""The GPU allocator: each GPU job leases its own device(s) by lock file, with fake device counts."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reranklab.errors import ConfigError
from reranklab.gpu import acquire_gpus, gpu_binding, lock_dir, visible_devices, wants_binding
from reranklab.resources import STUDY as STUDY_TEMPLATE
from tests.conftest import tool_env

# A GPU step in miniature: lease a device, report it, hold it until told to stop.
HOLDER = """
import os, sys, time
from pathlib import Path
from reranklab.gpu import gpu_binding
with gpu_binding("auto", n=int(sys.argv[2]), timeout=float(sys.argv[3])) as devices:
    # Written whole, then renamed: the test reads a .dev file as soon as it appears.
    Path(sys.argv[1], f"{os.getpid()}.tmp").write_text(os.environ["CUDA_VISIBLE_DEVICES"])
    os.replace(Path(sys.argv[1], f"{os.getpid()}.tmp"), Path(sys.argv[1], f"{os.getpid()}.dev"))
    deadline = time.monotonic() + 60
    while not Path(sys.argv[1], "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
"""
WAIT_S = 60


def _env(tmp_path: Path, count: int, visible: str | None = None) -> dict[str, str]:
    env = tool_env()
    env.update(
        {"RERANKLAB_GPU_COUNT": str(count), "RERANKLAB_GPU_LOCK_DIR": str(tmp_path / "locks")}
    )
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("SLURM_JOB_ID", None)
    env.pop("RERANKLAB_GPU_BINDING", None)
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    return env


def _holders(
    tmp_path: Path, env: dict[str, str], n_processes: int, gpus_each: int = 1, timeout: float = 30
) -> list[subprocess.Popen]:
    return [
        subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(tmp_path), str(gpus_each), str(timeout)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n_processes)
    ]


def _leased(tmp_path: Path, n: int, processes: list[subprocess.Popen]) -> list[str]:
    deadline = time.monotonic() + WAIT_S
    while len(list(tmp_path.glob("*.dev"))) < n:
        failed = [p for p in processes if p.poll() not in (None, 0)]
        assert not failed, failed[0].stderr.read()
        assert time.monotonic() < deadline, "the holders did not lease their devices in time"
        time.sleep(0.01)
    return sorted(p.read_text() for p in tmp_path.glob("*.dev"))


def _finish(tmp_path: Path, processes: list[subprocess.Popen]) -> None:
    (tmp_path / "go").touch()
    for process in processes:
        process.wait(timeout=WAIT_S)


def test_visible_devices_honour_cuda_visible_devices():
    assert visible_devices({"CUDA_VISIBLE_DEVICES": "3,1"}, count=8) == ["3", "1"]
    assert visible_devices({"CUDA_VISIBLE_DEVICES": "GPU-8a3f,GPU-19bc"}) == [
        "GPU-8a3f",
        "GPU-19bc",
    ]
    assert visible_devices({"CUDA_VISIBLE_DEVICES": ""}, count=8) == []
    assert visible_devices({"RERANKLAB_GPU_COUNT": "3"}) == ["0", "1", "2"]
    assert visible_devices({}, count=0) == []


def test_binding_policy():
    four = {"RERANKLAB_GPU_COUNT": "4"}
    assert wants_binding("auto", four) and wants_binding("cuda", four)
    assert not wants_binding("cpu", four) and not wants_binding("cuda:2", four)  # the user chose
    assert not wants_binding("auto", {"RERANKLAB_GPU_COUNT": "0"})  # no GPU: CPU as before
    assert not wants_binding("auto", {**four, "RERANKLAB_GPU_BINDING": "0"})


def test_leases_are_exclusive_all_or_none_and_released(tmp_path):
    devices = ["0", "1", "2"]
    first = acquire_gpus(2, devices=devices, directory=tmp_path)
    assert first.devices == ["0", "1"]
    second = acquire_gpus(1, devices=devices, directory=tmp_path)
    assert second.devices == ["2"]
    with pytest.raises(TimeoutError):
        acquire_gpus(1, devices=devices, directory=tmp_path, timeout=0.2, poll=0.05)
    second.release()
    # Two wanted, one free: nothing is held while waiting (no deadlock between DDP jobs).
    with pytest.raises(TimeoutError):
        acquire_gpus(2, devices=devices, directory=tmp_path, timeout=0.2, poll=0.05)
    assert acquire_gpus(1, devices=devices, directory=tmp_path).devices == ["2"]
    first.release()
    with pytest.raises(ConfigError, match="3 GPU"):
        acquire_gpus(3, devices=["0", "1"], directory=tmp_path)


def test_gpu_binding_sets_and_restores_cuda_visible_devices(tmp_path):
    env = {"RERANKLAB_GPU_COUNT": "2", "RERANKLAB_GPU_LOCK_DIR": str(tmp_path)}
    other = dict(env)  # another process's environment
    with (
        gpu_binding("auto", environ=env, timeout=5) as first,
        gpu_binding("auto", environ=other, timeout=5) as second,
    ):
        assert (first, second) == (["0"], ["1"])
        assert (env["CUDA_VISIBLE_DEVICES"], other["CUDA_VISIBLE_DEVICES"]) == ("0", "1")
    assert "CUDA_VISIBLE_DEVICES" not in env
    # Inside a bound step, CUDA_VISIBLE_DEVICES is honoured: a nested step finds device 0 taken.
    with gpu_binding("auto", environ=env, timeout=5):
        inner = dict(env)  # a step started from within the bound one
        with pytest.raises(TimeoutError), gpu_binding("auto", environ=inner, timeout=0.2):
            pass
    with gpu_binding("cpu", environ=env) as none:
        assert none == [] and "CUDA_VISIBLE_DEVICES" not in env


def test_slurm_jobs_lock_in_their_own_namespace(tmp_path):
    assert lock_dir({"SLURM_JOB_ID": "12"}, tmp_path) != lock_dir({"SLURM_JOB_ID": "13"}, tmp_path)
    assert lock_dir({}, tmp_path).parent == tmp_path


def test_processes_get_different_devices(tmp_path):
    processes = _holders(tmp_path, _env(tmp_path, count=4), 4)
    try:
        assert _leased(tmp_path, 4, processes) == ["0", "1", "2", "3"]
        # A fifth job finds no free device and gives up after its timeout.
        late = subprocess.run(
            [sys.executable, "-c", HOLDER, str(tmp_path / "late"), "1", "0.3"],
            env=_env(tmp_path, 4),
            capture_output=True,
            text=True,
        )
        assert late.returncode != 0 and "TimeoutError" in late.stderr
    finally:
        _finish(tmp_path, processes)
    assert all(p.returncode == 0 for p in processes)


def test_an_existing_cuda_visible_devices_is_honoured(tmp_path):
    processes = _holders(tmp_path, _env(tmp_path, count=8, visible="5,2"), 2)
    try:
        assert _leased(tmp_path, 2, processes) == ["2", "5"]
    finally:
        _finish(tmp_path, processes)


def test_a_killed_job_frees_its_device(tmp_path):
    env = _env(tmp_path, count=1)
    holder = _holders(tmp_path, env, 1)
    follower: list[subprocess.Popen] = []
    try:
        assert _leased(tmp_path, 1, holder) == ["0"]
        os.kill(holder[0].pid, signal.SIGKILL)
        holder[0].wait(timeout=WAIT_S)
        for path in tmp_path.glob("*.dev"):
            path.unlink()
        # The kernel dropped the dead process's lock: the next job gets the device at once.
        follower = _holders(tmp_path, env, 1, timeout=5)
        assert _leased(tmp_path, 1, follower) == ["0"]
    finally:
        _finish(tmp_path, holder + follower)


# Each job leases a device, then waits until all four jobs hold one at the same time.
BARRIER = """
import os, sys, time
from pathlib import Path
from reranklab.gpu import gpu_binding
out = Path(sys.argv[1])
with gpu_binding("auto", timeout=30):
    (out.parent / f"{out.stem}.held").write_text(os.environ["CUDA_VISIBLE_DEVICES"])
    deadline = time.monotonic() + 60
    while len(list(out.parent.glob("*.held"))) < 4:
        if time.monotonic() > deadline:
            sys.exit("the four GPU jobs did not run at the same time")
        time.sleep(0.01)
    out.write_text(os.environ["CUDA_VISIBLE_DEVICES"])
"""


@pytest.mark.integration
def test_snakemake_runs_four_gpu_jobs_at_once_on_four_devices(tmp_path):
    """``snakemake --cores 16 --resources gpu=4``: four jobs at once, each on its own device."""
    (tmp_path / "barrier.py").write_text(BARRIER)
    (tmp_path / "Snakefile").write_text(
        "rule all:\n"
        "    input: expand('out/{i}.dev', i=range(4))\n"
        "rule job:\n"
        "    output: 'out/{i}.dev'\n"
        "    resources: gpu=1\n"
        f"    shell: '{sys.executable} barrier.py {{output}}'\n"
    )
    result = subprocess.run(
        ["snakemake", "--cores", "16", "--resources", "gpu=4"],
        cwd=tmp_path,
        env=_env(tmp_path, count=4),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted((tmp_path / "out" / f"{i}.dev").read_text() for i in range(4)) == [
        "0",
        "1",
        "2",
        "3",
    ]


def test_jobs_share_a_gpu_by_slots(tmp_path):
    """training.gpu_slots 4: two small jobs (1 and 2 slots) run on device 0 together; a third
    that wants 2 slots, and a whole-GPU job, wait; once they are done a whole-GPU job gets it."""
    lease = dict(devices=["0"], directory=tmp_path, slots=4)
    with acquire_gpus(share=1, **lease) as a, acquire_gpus(share=2, **lease) as b:
        assert a.devices == b.devices == ["0"]
        with pytest.raises(TimeoutError):
            acquire_gpus(share=2, timeout=0.2, poll=0.05, **lease)
        with pytest.raises(TimeoutError):
            acquire_gpus(timeout=0.2, poll=0.05, **lease)  # every slot: a whole GPU
        with acquire_gpus(share=1, timeout=1, **lease) as c:  # the last free slot
            assert c.devices == ["0"]
    with acquire_gpus(timeout=1, **lease) as whole:
        assert whole.devices == ["0"] and len(whole.locks) == 4
        with pytest.raises(TimeoutError):
            acquire_gpus(share=1, timeout=0.2, poll=0.05, **lease)


def test_slot_shares_that_cannot_fit_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="gpu_share: 5 slot"):
        acquire_gpus(devices=["0"], directory=tmp_path, slots=4, share=5)
    with pytest.raises(ConfigError, match="takes whole GPUs"):
        acquire_gpus(2, devices=["0", "1"], directory=tmp_path, slots=4, share=1)


@pytest.mark.integration
def test_the_rules_lease_slots(tmp_path, repo):
    """A model job passes its lease to its step: its share of one GPU, or 0 (whole GPUs)."""
    import yaml

    (tmp_path / "Snakefile").write_text((STUDY_TEMPLATE / "Snakefile").read_text())
    (tmp_path / "params.yaml").write_text((repo / "params.yaml").read_text())
    config = {
        "study": "slots",
        "datasets": ["sample"],
        "protocol": {"sample": {"folds": 2}},
        "grid": {"variant": ["pointwise", "dmn_lite"], "max_length": [64]},
        "training": {"gpu_slots": 4, "device": "cpu"},
        "variants": {"dmn_lite": {"gpu_share": 1}},
    }
    (tmp_path / "slots.yaml").write_text(yaml.safe_dump(config))
    command = ["snakemake", "-n", "-p", "--cores", "2", "--resources", "gpu=4"]
    result = subprocess.run(
        [*command, "--configfile", "slots.yaml"],
        cwd=tmp_path,
        env=_env(tmp_path, count=0),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    leases = {
        (step, variant): lease
        for step, lease, variant in re.findall(
            r"reranklab (train|rerank|encode) .*?--gpu-slots (\d+ --gpu-share \d+).*?(pointwise|dmn_lite)-L64",
            result.stdout,
        )
    }
    assert leases == {
        ("train", "pointwise"): "4 --gpu-share 0",
        ("rerank", "pointwise"): "4 --gpu-share 0",
        ("encode", "dmn_lite"): "4 --gpu-share 1",
        ("train", "dmn_lite"): "4 --gpu-share 1",
        ("rerank", "dmn_lite"): "4 --gpu-share 1",
    }, result.stdout[-3000:]
