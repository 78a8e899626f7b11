"""Random-kill soak: kill a small study at seeded random moments, resume it, check nothing was lost.

    python scripts/soak.py --kills 50 --seed 0 --report soak.json      # or: make soak N=50

The study is the shipped sample collection re-ranked by BERTlets (a tiny BERT built from a
config, 2 folds, 2 epochs, a checkpoint every 5 steps), tracked in MLflow as any study is: 30 jobs.
It is first run once uninterrupted: the reference. Then, for each kill, a fresh copy of the study
folder is started with ``snakemake``, and after a seeded random delay it gets SIGKILL or SIGTERM,

- either the whole run: Snakemake's process group, as ``timeout``, Ctrl-C or a SLURM walltime do;
- or one running job: its shell and its python, as ``scancel`` of that job does.

Then ``snakemake --unlock`` and ``snakemake --rerun-incomplete`` finish the study, and the soak
checks what the house rules promise (``CHECKS``): the killed Snakemake exits within 30 s of a
SIGTERM, no process of either run survives, the results are byte-identical to the reference,
nothing temporary is left (no ``.<name>.<random>.tmp``/``.old``, no checkpoint), and no MLflow run
is RUNNING. The report (JSON) lists every kill with its checks; the exit status is 1 if any
failed, and the failed kill's folder is kept for a look. About a minute a kill on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from reranklab.io.atomic import is_temporary

CHECKS = (
    "exited_after_sigterm",  # a SIGTERMed Snakemake is gone within SIGTERM_EXIT_S
    "no_survivor",  # no process of the killed run nor of the rerun is alive
    "rerun_succeeded",  # --unlock and --rerun-incomplete finish the study
    "identical",  # every compared result byte-identical to the reference
    "no_temporary",  # no atomic-write temporary, no training checkpoint left
    "no_running_mlflow_run",  # every MLflow run finished, failed or killed
)
SIGTERM_EXIT_S = 30.0
RUN_TIMEOUT_S = 900.0
SOAK_CONFIG = {
    "study": "soak",
    "datasets": ["sample"],
    "grid": {"variant": ["bertlets"], "max_length": [64]},
    "protocol": {"sample": {"folds": 2}},
    "training": {
        "epochs": 2,
        "batch_size": 8,
        "learning_rate": 1.0e-3,
        "checkpoint_every": 5,  # kills land between checkpoints and resume from one
    },
}
# What a run must reproduce byte for byte: every result file, the trained weights included. Left
# out, because they legitimately differ between two clean runs: logs, timings (train_stats.json,
# the report's pages and figures), MLflow's ids (mlflow.db, mlartifacts/, mlflow.json) and
# Snakemake's own timestamps.
COMPARED = re.compile(
    r"results/(data|first_stage|splits|samples|runs|metrics)/.*"
    r"|results/models/.*\.safetensors"
    r"|results/cells/.*/(run\.txt|metrics\.json)"
    r"|results/(summary\.csv|significance\.csv)"
)


@dataclass
class Kill:
    """One kill: what was sent where, what the run did, and each check's outcome."""

    index: int
    signal: str
    target: str  # "run" or "job"
    delay_s: float
    draw: int  # seeds the choice among the jobs running at the signal
    job: str = ""  # the rule of the signalled job
    missed: bool = False  # the run had ended before the signal
    exit_s: float | None = None  # signal to Snakemake's exit
    killed_returncode: int | None = None
    rerun_s: float | None = None
    checks: dict[str, bool] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(self.checks.values())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _snakemake(cores: int, *args: str) -> list[str]:
    return [
        "snakemake",
        "--cores",
        str(cores),
        "--resources",
        "gpu=1",
        "--configfile",
        "config/soak.yaml",
        *args,
    ]


def build_template(work: Path) -> Path:
    """A study folder (``reranklab init``) whose config trains a tiny BERT built here."""
    import yaml

    from reranklab.data.sample import words
    from reranklab.models.tiny import build_tiny_bert

    bert = build_tiny_bert(work / "tiny-bert", words())
    template = work / "template"
    subprocess.run(
        ["reranklab", "init", str(template)], env=_env(), check=True, capture_output=True
    )
    config = {**SOAK_CONFIG, "training": {**SOAK_CONFIG["training"], "encoder": str(bert)}}
    (template / "config/soak.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return template


def digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every compared result file under ``folder``, by its relative path."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and COMPARED.fullmatch(str(path.relative_to(folder)))
    }


def differences(reference: dict[str, str], got: dict[str, str]) -> list[str]:
    """The compared files missing, extra or changed against the reference."""
    return sorted(
        f"{name}: {'missing' if name not in got else 'extra' if name not in reference else 'differs'}"
        for name in reference.keys() | got.keys()
        if reference.get(name) != got.get(name)
    )


def leftovers(folder: Path) -> list[str]:
    """Temporaries of interrupted atomic writes, and training checkpoints, left in ``folder``."""
    found = [
        str(path.relative_to(folder))
        for path in folder.rglob(".*")
        if is_temporary(path.name) and ".snakemake" not in path.parts
    ]
    checkpoints = folder / "results/checkpoints"
    if checkpoints.is_dir():
        found += [str(p.relative_to(folder)) for p in checkpoints.rglob("*") if p.is_file()]
    return sorted(found)


def running_mlflow_runs(folder: Path) -> list[str]:
    """Ids of the MLflow runs still RUNNING in the study's tracking store (results/mlflow.db)."""
    store = folder / "results/mlflow.db"
    if not store.is_file():
        return []
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return [row[0] for row in db.execute("SELECT run_uuid FROM runs WHERE status='RUNNING'")]


def survivors(pgid: int, folder: Path) -> list[str]:
    """Processes still alive from a run: its process group, or any working inside ``folder``."""
    alive = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            in_group = os.getpgid(proc.pid) == pgid
        except ProcessLookupError:
            continue
        cwd = proc.info["cwd"] or ""
        if in_group or cwd == str(folder) or cwd.startswith(f"{folder}{os.sep}"):
            alive.append(f"{proc.pid}: {' '.join(proc.info['cmdline'] or [])[:120]}")
    return alive


def _wait_gone(pgid: int, folder: Path, within_s: float) -> list[str]:
    deadline = time.monotonic() + within_s
    while (alive := survivors(pgid, folder)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive


def _jobs(snakemake: psutil.Process) -> list[list[psutil.Process]]:
    """Each running job of a local Snakemake: its shell and every process under it."""
    jobs = []
    for child in snakemake.children():
        try:
            tree = [child, *child.children(recursive=True)]
            if any("reranklab" in " ".join(p.cmdline()) for p in tree):
                jobs.append(tree)
        except psutil.NoSuchProcess:
            continue
    return jobs


def _rule(tree: list[psutil.Process]) -> str:
    for proc in tree:
        with_name = [a for a in proc.cmdline() if not a.startswith("-")]
        for i, arg in enumerate(with_name):
            if arg.endswith("reranklab") and i + 1 < len(with_name):
                return with_name[i + 1]
    return "?"


def _signal_job(process: subprocess.Popen, sig: int, rng: random.Random, until: float) -> str:
    """Send ``sig`` to one running job's processes (chosen by ``rng``); its rule, or "" if none
    ran before ``until``."""
    snakemake = psutil.Process(process.pid)
    while time.monotonic() < until and process.poll() is None:
        jobs = _jobs(snakemake)
        if jobs:
            tree = rng.choice(sorted(jobs, key=lambda t: t[0].pid))
            rule = _rule(tree)
            for proc in tree:
                with contextlib.suppress(psutil.NoSuchProcess):
                    proc.send_signal(sig)
            return rule
        time.sleep(0.05)
    return ""


def _wait(process: subprocess.Popen, timeout: float) -> float | None:
    start = time.monotonic()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return time.monotonic() - start


def run_once(folder: Path, cores: int, log: Path, *args: str) -> tuple[int, float]:
    """Run the study in ``folder`` to its end; its return code and seconds."""
    start = time.monotonic()
    with open(log, "a") as out:
        done = subprocess.run(
            _snakemake(cores, *args),
            cwd=folder,
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=RUN_TIMEOUT_S,
        )
    return done.returncode, time.monotonic() - start


def soak_one(kill: Kill, template: Path, work: Path, reference: dict[str, str], cores: int) -> Kill:
    """Start a copy of the study, deliver ``kill``, resume it, and run every check."""
    folder = work / f"kill-{kill.index:03d}"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(template, folder, symlinks=True)
    log = folder / "soak.log"
    sig = signal.Signals[kill.signal]
    with open(log, "w") as out:
        process = subprocess.Popen(
            _snakemake(cores),
            cwd=folder,
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as a shell's job or a batch job
        )
    pgid = process.pid
    rng = random.Random(kill.draw)
    time.sleep(kill.delay_s)
    if process.poll() is not None:
        kill.missed = True
    elif kill.target == "run":
        os.killpg(pgid, sig)
    else:
        kill.job = _signal_job(process, sig, rng, until=time.monotonic() + 60)
        kill.missed = not kill.job
    signalled = time.monotonic()
    exited = _wait(process, RUN_TIMEOUT_S if kill.target == "job" else 120)
    kill.exit_s = None if exited is None else round(time.monotonic() - signalled, 2)
    kill.checks["exited_after_sigterm"] = (
        kill.signal != "SIGTERM"
        or kill.target == "job"
        or (kill.exit_s is not None and kill.exit_s <= SIGTERM_EXIT_S)
    )
    if exited is None:
        kill.problems.append("snakemake did not exit: killed by the soak")
        os.killpg(pgid, signal.SIGKILL)
        process.wait()
    kill.killed_returncode = process.returncode
    alive = _wait_gone(pgid, folder, SIGTERM_EXIT_S)
    kill.problems += [f"survived the kill: {a}" for a in alive]
    for proc_line in alive:  # a survivor would race the rerun: the soak ends it after noting it
        with_pid = int(proc_line.split(":", 1)[0])
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(with_pid).kill()

    subprocess.run(_snakemake(cores, "--unlock"), cwd=folder, env=_env(), capture_output=True)
    returncode, seconds = run_once(folder, cores, log, "--rerun-incomplete")
    kill.rerun_s = round(seconds, 1)
    kill.checks["rerun_succeeded"] = returncode == 0
    if returncode:
        kill.problems.append(f"the rerun failed ({returncode}): see {log}")
    after = survivors(pgid, folder)
    kill.checks["no_survivor"] = not alive and not after
    kill.problems += [f"alive after the rerun: {a}" for a in after]
    changed = differences(reference, digests(folder))
    kill.checks["identical"] = not changed
    kill.problems += changed
    left = leftovers(folder)
    kill.checks["no_temporary"] = not left
    kill.problems += [f"left behind: {name}" for name in left]
    running = running_mlflow_runs(folder)
    kill.checks["no_running_mlflow_run"] = not running
    kill.problems += [f"MLflow run RUNNING: {run}" for run in running]
    return kill


def plan_kills(n: int, seed: int, reference_s: float) -> list[Kill]:
    """``n`` kills drawn from ``seed``: signal, target and a delay within the reference's run."""
    rng = random.Random(seed)
    return [
        Kill(
            index=i,
            signal=rng.choice(["SIGKILL", "SIGTERM"]),
            target=rng.choice(["run", "job"]),
            delay_s=round(rng.uniform(1.0, 0.9 * reference_s), 2),
            draw=rng.randrange(2**32),
        )
        for i in range(n)
    ]


DOCS_START, DOCS_END = "<!-- soak:start -->", "<!-- soak:end -->"


def docs_block(report: dict[str, Any]) -> str:
    """The soak's result as the docs show it (written between the markers by ``--docs``)."""
    trials = report["trials"]
    rows = [
        f"| {sig} to the {target} | {len(done)} | {sum(all(t['checks'].values()) for t in done)} |"
        for sig in ("SIGKILL", "SIGTERM")
        for target in ("run", "job")
        if (done := [t for t in trials if t["signal"] == sig and t["target"] == target])
    ]
    exits = [t["exit_s"] for t in trials if t["signal"] == "SIGTERM" and t["target"] == "run"]
    checks = ", ".join(f"{name} {n}/{report['kills']}" for name, n in report["by_check"].items())
    return "\n".join(
        [
            f"`{report['command']}`, started {report['started']} on {report['cores']} cores"
            f" ({report['machine']}): **{report['passed']} of {report['kills']} kills passed every"
            f" check**. The uninterrupted reference took {report['reference_seconds']:.0f} s and"
            f" wrote {report['compared_files']} compared files; {report['missed']} signals came"
            " after the run had ended.",
            "",
            "| kill | kills | passed |",
            "| --- | ---: | ---: |",
            *rows,
            "",
            f"Each check: {checks}."
            + (
                f" A SIGTERMed Snakemake exited {min(exits):.1f}-{max(exits):.1f} s after the signal."
                if exits
                else ""
            ),
        ]
    )


def write_docs(path: Path, report: dict[str, Any]) -> None:
    """Replace the block between the soak markers of ``path`` with :func:`docs_block`."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(DOCS_START), text.find(DOCS_END)
    if start < 0 or end < start:
        raise SystemExit(f"{path}: no {DOCS_START} ... {DOCS_END} block to write the result into")
    block = f"{DOCS_START}\n{docs_block(report)}\n{DOCS_END}"
    path.write_text(text[:start] + block + text[end + len(DOCS_END) :], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10, help="how many kills (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="draws the kills (default 0)")
    parser.add_argument("--cores", type=int, default=2, help="snakemake --cores (default 2)")
    parser.add_argument("--work", type=Path, default=Path("results/soak"), help="scratch folder")
    parser.add_argument("--report", type=Path, default=Path("results/soak/report.json"))
    parser.add_argument(
        "--docs", type=Path, help="also write the result into this page's soak block"
    )
    args = parser.parse_args(argv)

    args.work = args.work.resolve()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    template = build_template(args.work)
    reference = args.work / "reference"
    shutil.copytree(template, reference, symlinks=True)
    returncode, reference_s = run_once(reference, args.cores, reference / "soak.log")
    if returncode:
        print(f"the uninterrupted reference run failed: see {reference / 'soak.log'}")
        return 1
    expected = digests(reference)
    print(f"reference: {len(expected)} result files in {reference_s:.0f} s", flush=True)

    kills = []
    for kill in plan_kills(args.kills, args.seed, reference_s):
        kill = soak_one(kill, template, args.work, expected, args.cores)
        kills.append(kill)
        verdict = "ok" if kill.passed else "FAILED: " + "; ".join(kill.problems[:3])
        where = kill.job or ("(run ended first)" if kill.missed else "")
        print(
            f"kill {kill.index + 1}/{args.kills}: {kill.signal} to the {kill.target} {where} "
            f"at {kill.delay_s:.1f} s -> {verdict}",
            flush=True,
        )
        if kill.passed:
            shutil.rmtree(args.work / f"kill-{kill.index:03d}")

    failed = [k.index for k in kills if not k.passed]
    report = {
        "command": " ".join(["scripts/soak.py", *(argv if argv is not None else sys.argv[1:])]),
        "started": started,
        "seed": args.seed,
        "cores": args.cores,
        "machine": f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}",
        "study": SOAK_CONFIG,
        "reference_seconds": round(reference_s, 1),
        "compared_files": len(expected),
        "kills": len(kills),
        "passed": len(kills) - len(failed),
        "failed": failed,
        "by_check": {c: sum(k.checks.get(c, False) for k in kills) for c in CHECKS},
        "missed": sum(k.missed for k in kills),
        "trials": [asdict(k) for k in kills],
    }
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=2) + "\n")
    if args.docs:
        write_docs(args.docs, report)
    print(f"{report['passed']}/{len(kills)} kills passed every check; report: {args.report}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
