"""Golden outputs of hpcgym, recorded before the layering refactor.

The refactor must not change what hpcgym computes. This module holds the *recipes*: each
one runs a command line of the README / docs or a public Python API with small, fixed
settings and returns its outputs, normalised (volatile fields stripped, absolute paths
replaced). ``tests/test_golden.py`` runs every recipe against the code in the tree and
compares with the files recorded here; this script (re)records them:

    cd <repo> && HPCGYM_TRACE_DIR=/work/shared/traces python tests/golden/record.py [NAME ...]
    python tests/golden/record.py --list

Rerun it only when an output is *meant* to change, and say so in the commit. A recipe
whose traces are not available (``HPCGYM_TRACE_DIR``) is not recorded (here) / skipped
(in the test).

Layout: ``tests/golden/<recipe>/<file>`` -- ``.csv`` (the output's CSV without the
volatile columns), ``.json`` (the output's JSON without the volatile keys), ``.md``
(a Markdown table printed on stdout).

Comparison rules (:func:`compare_outputs`): every recorded file, column, key, row and
value must be reproduced; new files, new CSV columns, new Markdown table columns and new
JSON object keys are tolerated (later work adds e.g. ``geo_ratio, ci_low, ci_high,
wins``). JSON: strings, ints, bools and None equal, floats equal or within
:data:`golden_diff.FLOAT_RTOL` (relative), lists of the same length and order. CSV and Markdown
tables: every recorded cell equal, floats within :data:`golden_diff.CSV_FLOAT_RTOL` (the
last bit of numpy's vectorised ``log``/``exp`` depends on the CPU), the same rows in the
same order, the recorded columns in their recorded relative order; Markdown text
lines equal.

Recipes (see :data:`RECIPES`; each function's docstring has the details):

* ``compare_sdsc`` / ``compare_synthetic`` -- ``python eval/compare.py`` with four
  recorded agents (research/agents), the ``easy`` heuristic and eleven schedulers, 2
  windows x 256 jobs of the test split (SDSC-SP2; the 10,000-job synthetic workload).
* ``table4`` / ``table5`` -- ``python eval/table4.py`` / ``eval/table5.py``, 2 x 256.
* ``cli_compare`` -- the README's ``hpcgym compare`` command (``--json`` and the table).
* ``cli_simulate`` -- the README's three ``hpcgym simulate`` commands (``--json``).
* ``env_synthetic`` / ``env_lublin1`` / ``env_sdsc`` -- Gymnasium episodes of
  ``hpcgym/Backfill-v0`` with fixed seeds and deterministic, mask-respecting actions.
* ``sim_api_synthetic`` / ``sim_api_sdsc`` -- ``hpcgym.sim.simulate`` and
  ``get_scheduler(name).simulate(window)`` metrics.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parent
REPO = GOLDEN_DIR.parents[1]

from golden_diff import compare_outputs  # noqa: E402  (tests/golden/golden_diff.py)
from golden_files import load_golden, write_golden  # noqa: E402  (tests/golden/golden_files.py)

#: keys (JSON, at any depth) and CSV columns that are stripped before recording and
#: comparing: wall-clock timings, timestamps, versions, hosts. Not ``time``: the env's
#: ``info["time"]`` is the simulated time (deterministic).
VOLATILE_KEYS: frozenset[str] = frozenset(
    {
        "seconds",  # hpcgym compare --json rows: wall time of each simulation
        "sim_seconds",  # engine metrics: wall time of the simulation
        "wall_time_s",  # model cards
        "wall_seconds",
        "wall_s",
        "total_s",  # timing.json (not recorded at all)
        "per_window_s",  # timing.json
        "elapsed",
        "timestamp",
        "created",
        "date",
        "versions",  # model cards: python / numpy / torch versions
        "hostname",
        "host",
    }
)
#: files an output folder holds that are never recorded (non-deterministic or binary)
SKIPPED_FILES: tuple[str, ...] = ("timing.json", "*.png", "table.md", "table4.md", "table5.md")
#: absolute paths replaced in every recorded string: the checkout (``<repo>``), the
#: output folder of a run (``<out>``) and the trace directories (``<traces>``)
PATH_TOKENS: tuple[str, ...] = ("<repo>", "<out>", "<traces>")

#: the agents evaluated by the compare recipes (recorded as agents/pretrained/, kept
#: under their names in research/agents/)
PRETRAINED = (
    "research/agents/sdsc-sp2-fcfs-guarded-paper.zip",
    "research/agents/sdsc-sp2-fcfs-free.zip",
    "research/agents/lublin1-fcfs-guarded-paper.zip",
    "research/agents/lublin1-fcfs-free.zip",
)
#: the generated workload of the ``*_synthetic`` recipes: the 10,000-job workload they
#: were recorded on (hpcgym's default workload before 1.0; same arguments, same jobs)
SYNTHETIC_10K = "synthetic:n_jobs=10000"
#: the engine schedulers of the compare recipes (the README's eval/compare.py command)
COMPARE_SCHEDULERS = (
    "EASY",
    "EASY-AR",
    "EASY-SJBF",
    "SAF",
    "EASY++",
    "ELOSS",
    "EASY-HMM",
    "SJF+EASY",
    "WFP3+EASY",
    "F1+EASY",
    "CONSERVATIVE",
)
#: window protocol of the eval/ recipes
SMALL_WINDOWS = ("--windows", "2", "--length", "256", "--split", "test", "--seed", "1")
#: execution flags of the eval/ recipes (in-process, no bar, no PNG)
EVAL_RUN = ("--jobs", "1", "--no-progress", "--no-plots")


# =========================================================================== recipes
@dataclass(frozen=True)
class Recipe:
    """One golden recipe: ``run(workdir)`` returns ``{file name: normalised content}``
    (``.csv`` / ``.md``: text, ``.json``: a JSON-able object)."""

    name: str
    run: Callable[[Path], dict[str, Any]]
    traces: tuple[str, ...] = ()  # registered traces it needs (HPCGYM_TRACE_DIR)

    @property
    def doc(self) -> str:
        return (self.run.__doc__ or "").strip().split("\n\n")[0]


def _paths(out: Path | None = None) -> list[tuple[str, str]]:
    """(absolute path, token) pairs to replace, longest first."""
    pairs: list[tuple[str, str]] = []
    for p, tok in [(REPO, "<repo>"), (out, "<out>")] + [
        (Path(d), "<traces>") for d in os.environ.get("HPCGYM_TRACE_DIR", "").split(os.pathsep)
    ]:
        if p is None or not str(p).strip():
            continue
        for v in {str(p), str(Path(p).resolve())}:
            if len(v) > 1:
                pairs.append((v, tok))
    return sorted(pairs, key=lambda x: -len(x[0]))


def _subst(text: str, pairs: list[tuple[str, str]]) -> str:
    for p, tok in pairs:
        text = text.replace(p, tok)
    return text


def normalize_json(obj: Any, pairs: list[tuple[str, str]] | None = None) -> Any:
    """``obj`` without the :data:`VOLATILE_KEYS` (any depth), paths replaced, tuples as
    lists, numpy scalars as Python numbers."""
    pairs = _paths() if pairs is None else pairs
    if isinstance(obj, dict):
        return {str(k): normalize_json(v, pairs) for k, v in obj.items() if k not in VOLATILE_KEYS}
    if isinstance(obj, (list, tuple)):
        return [normalize_json(v, pairs) for v in obj]
    if isinstance(obj, str):
        return _subst(obj, pairs)
    if hasattr(obj, "item") and not isinstance(obj, (bool, int, float)):  # numpy scalar
        return normalize_json(obj.item(), pairs)
    return obj


def normalize_csv(text: str, pairs: list[tuple[str, str]] | None = None) -> str:
    """The CSV ``text`` without the :data:`VOLATILE_KEYS` columns, paths replaced."""
    pairs = _paths() if pairs is None else pairs
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return ""
    keep = [i for i, h in enumerate(rows[0]) if h not in VOLATILE_KEYS]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow([_subst(r[i], pairs) if i < len(r) else "" for i in keep])
    return buf.getvalue()


def _python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    return env


def run_cli(args: list[str], timeout: float = 300) -> str:
    """Run ``python ARGS`` from the repository root (the code of this checkout); return
    stdout, raise with stdout/stderr when the exit code is not 0."""
    cmd = [sys.executable, *args]
    proc = subprocess.run(
        cmd, cwd=REPO, env=_python_env(), capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"command failed with exit code {proc.returncode}: {' '.join(cmd)}\n"
            f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
        )
    return proc.stdout


def _skipped(rel: str) -> bool:
    from fnmatch import fnmatch

    return any(fnmatch(Path(rel).name, pat) for pat in SKIPPED_FILES)


def collect_folder(out: Path) -> dict[str, Any]:
    """Every CSV / JSON / NPZ file under ``out`` (recursively), normalised; ``.npz``
    files become ``<name>.json`` digests (:func:`npz_digest`)."""
    pairs = _paths(out)
    files: dict[str, Any] = {}
    for p in sorted(out.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(out).as_posix()
        if _skipped(rel):
            continue
        if p.suffix == ".csv":
            files[rel] = normalize_csv(p.read_text(encoding="utf-8"), pairs)
        elif p.suffix == ".json":
            files[rel] = normalize_json(json.loads(p.read_text(encoding="utf-8")), pairs)
        elif p.suffix == ".npz":
            files[rel[: -len(".npz")] + ".npz.json"] = npz_digest(p)
    return files


def array_digest(a: Any) -> dict[str, Any]:
    """dtype, shape, SHA-256 of the C-ordered bytes (first 16 hex digits) and a few
    float64 summaries of an array."""
    import numpy as np

    a = np.asarray(a)
    d: dict[str, Any] = {
        "dtype": str(a.dtype),
        "shape": list(a.shape),
        "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16],
    }
    if a.dtype.kind in "biuf" and a.size:
        f = a.astype(np.float64)
        d["sum"] = float(f.sum())
        d["min"] = float(f.min())
        d["max"] = float(f.max())
    elif a.dtype.kind in "US":
        d["values"] = [str(x) for x in a.ravel().tolist()]
    return d


def npz_digest(path: Path) -> dict[str, Any]:
    """``per_job.npz`` as digests: arrays ``start_i`` / ``bsld_i`` are keyed by the
    method's label (``start[EASY]``) so that reordering methods is no silent change."""
    import numpy as np

    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    labels = [str(x) for x in data.get("labels", [])]
    out: dict[str, Any] = {}
    for k, v in data.items():
        m = re.fullmatch(r"(.+)_(\d+)", k)
        if m and labels and int(m.group(2)) < len(labels):
            k = f"{m.group(1)}[{labels[int(m.group(2))]}]"
        out[k] = array_digest(v)
    return out


# ------------------------------------------------------------------ eval/compare.py
def _compare_py(trace: str, out: Path) -> dict[str, Any]:
    run_cli(
        [
            "eval/compare.py",
            "--trace",
            trace,
            "--agents",
            *PRETRAINED,
            "easy",
            "--schedulers",
            *COMPARE_SCHEDULERS,
            *SMALL_WINDOWS,
            *EVAL_RUN,
            "--out",
            str(out),
        ]
    )
    return collect_folder(out)


def compare_sdsc(work: Path) -> dict[str, Any]:
    """``python eval/compare.py --trace SDSC-SP2 --agents <4 agent zips> easy
    --schedulers <COMPARE_SCHEDULERS> --windows 2 --length 256 --split test --seed 1
    --jobs 1 --no-progress --no-plots --out DIR``: summary.csv, windows.csv, results.json
    and per_job.npz (as digests) -- the agents' scores on SDSC-SP2."""
    return _compare_py("SDSC-SP2", work / "compare")


def compare_synthetic(work: Path) -> dict[str, Any]:
    """As ``compare_sdsc`` with ``--trace synthetic:n_jobs=10000`` (a generated
    Lublin-Feitelson workload, :data:`SYNTHETIC_10K`; needs no trace file)."""
    return _compare_py(SYNTHETIC_10K, work / "compare")


# ------------------------------------------------------------ eval/table4.py, table5
def table4(work: Path) -> dict[str, Any]:
    """``python eval/table4.py --traces SDSC-SP2 Lublin-1 --windows 2 --length 256
    --split test --seed 1 --jobs 1 --no-progress --no-plots --cards <the four recorded
    agents' cards> --out DIR`` (the ``*-free`` agents, first by name; extra columns
    SAF EASY++ ELOSS EASY-HMM by default): table4.csv, table4.json and every trace
    folder's CSV / JSON / per_job digests."""
    out = work / "table4"
    run_cli(
        ["eval/table4.py", "--traces", "SDSC-SP2", "Lublin-1", *SMALL_WINDOWS, *EVAL_RUN]
        + ["--cards", *(str(REPO / Path(z).with_suffix(".json")) for z in sorted(PRETRAINED))]
        + ["--out", str(out)]
    )
    return collect_folder(out)


def table5(work: Path) -> dict[str, Any]:
    """``python eval/table5.py --cards research/agents/sdsc-sp2-fcfs-guarded-paper.json
    research/agents/lublin1-fcfs-guarded-paper.json --traces SDSC-SP2 Lublin-2 --windows 2
    --length 256 --split test --seed 1 --jobs 1 --no-progress --no-plots --out DIR``
    (sections FCFS and SJF; Lublin-1 is added as a row because an agent was trained on
    it): table5.csv, table5.json and every (trace, policy) folder's outputs."""
    out = work / "table5"
    run_cli(
        [
            "eval/table5.py",
            "--cards",
            "research/agents/sdsc-sp2-fcfs-guarded-paper.json",
            "research/agents/lublin1-fcfs-guarded-paper.json",
            "--traces",
            "SDSC-SP2",
            "Lublin-2",
            *SMALL_WINDOWS,
            *EVAL_RUN,
            "--out",
            str(out),
        ]
    )
    return collect_folder(out)


# ------------------------------------------------------------------ hpcgym commands
CLI_COMPARE = (
    "compare",
    "--trace",
    "SDSC-SP2",
    "--schedulers",
    "EASY",
    "EASY-AR",
    "EASY-SJBF",
    "SAF",
    "EASY++",
    "--windows",
    "10",
    "--length",
    "1024",
    "--split",
    "test",
)


def cli_compare(work: Path) -> dict[str, Any]:
    """The README's ``hpcgym compare --trace SDSC-SP2 --schedulers EASY EASY-AR
    EASY-SJBF SAF EASY++ --windows 10 --length 1024 --split test`` (as ``python -m
    hpcgym``): its stdout table (``stdout.md``), the same with ``--json``
    (``stdout.json``, without the rows' wall ``seconds``) and the files of ``--out DIR``
    (given together with ``--json``)."""
    out = work / "cli_compare"
    files: dict[str, Any] = {}
    files["stdout.md"] = _subst(run_cli(["-m", "hpcgym", *CLI_COMPARE]), _paths(out))
    text = run_cli(["-m", "hpcgym", *CLI_COMPARE, "--json", "--out", str(out)])
    files["stdout.json"] = normalize_json(json.loads(text), _paths(out))
    for k, v in collect_folder(out).items():
        files[f"out/{k}"] = v
    return files


CLI_SIMULATE = {
    "sdsc_easy.json": ("simulate", "--trace", "SDSC-SP2", "--scheduler", "EASY", "--json"),
    "sdsc_wfp3_actual.json": (
        "simulate",
        "--trace",
        "SDSC-SP2",
        "--policy",
        "WFP3",
        "--backfill",
        "easy",
        "--estimate",
        "actual",
        "--json",
    ),
    "ctc_easypp.json": (
        "simulate",
        "--trace",
        "CTC-SP2",
        "--scheduler",
        "EASY++",
        "--start",
        "1000",
        "--jobs",
        "1024",
        "--json",
    ),
}


def cli_simulate(work: Path) -> dict[str, Any]:
    """The README's three ``hpcgym simulate`` commands, with ``--json`` (the second and
    third have it added): whole-trace SDSC-SP2 EASY, whole-trace WFP3 + EASY with actual
    runtimes, CTC-SP2 EASY++ on jobs 1000..2023 (without ``sim_seconds``)."""
    return {
        name: normalize_json(json.loads(run_cli(["-m", "hpcgym", *args])))
        for name, args in CLI_SIMULATE.items()
    }


# ------------------------------------------------------------------- env episodes
#: env configurations: (label, gym.make kwargs, reset seeds, action rule)
#:   action rule "first": the first valid action of info["action_mask"] (a candidate
#:   row if any, else STOP); "random": valid[rng.integers(len(valid))] with
#:   rng = numpy.random.default_rng(reset seed), STOP included. Only valid actions.
ENV_CONFIGS: dict[str, list[tuple[str, dict[str, Any], tuple[int, ...], str]]] = {
    "env_synthetic": [
        (
            "guarded_fcfs_first",
            dict(trace=SYNTHETIC_10K, sequence_length=256, mode="guarded"),
            (2, 4),
            "first",
        ),
        (
            "free_fcfs_random_easy_norm",
            dict(trace=SYNTHETIC_10K, sequence_length=256, mode="free", normalizer="EASY"),
            (1,),
            "random",
        ),
        (
            "guarded_sjf_random_wait_pred",
            dict(
                trace=SYNTHETIC_10K,
                sequence_length=256,
                policy="SJF",
                mode="guarded",
                objective="wait",
                feature_predictor="ave2",
                split="test",
                max_queue=16,
            ),
            (0,),
            "random",
        ),
    ],
    "env_lublin1": [
        (
            "guarded_fcfs_first",
            dict(trace="Lublin-1", sequence_length=256, mode="guarded"),
            (0,),
            "first",
        ),
        (
            "free_sjf_random_nonorm",
            dict(
                trace="Lublin-1",
                sequence_length=256,
                policy="SJF",
                mode="free",
                normalizer=None,
                split="test",
            ),
            (2,),
            "random",
        ),
    ],
    "env_sdsc": [
        (
            "penalized_fcfs_random_ave2_hmm",
            dict(
                trace="SDSC-SP2",
                sequence_length=256,
                mode="penalized",
                estimator="ave2",
                feature_predictor="hmm",
                normalizer="EASY-SJBF",
                split="test",
                max_queue=32,
            ),
            (5,),
            "random",
        ),
        (
            "guarded_wfp3_first_util_actualpred",
            dict(
                trace="SDSC-SP2",
                sequence_length=256,
                policy="WFP3",
                mode="guarded",
                objective="utilization",
                feature_predictor="actual",
            ),
            (6,),
            "first",
        ),
    ],
}


def _obs_summary(obs: Any) -> dict[str, Any]:
    import numpy as np

    o = np.asarray(obs)
    f = o.astype(np.float64)
    return {
        "sha256": hashlib.sha256(np.ascontiguousarray(o).tobytes()).hexdigest()[:16],
        "sum": float(f.sum()),
        "rows": int((f[:, 0] > 0).sum()),
        "col_sums": [float(x) for x in f.sum(axis=0)],
    }


#: info keys recorded at every step (scalars); the mask is recorded as its valid indices
_STEP_INFO = (
    "decision",
    "candidates",
    "time",
    "decisions",
    "backfills",
    "violations",
    "violation",
    "invalid",
    "start",
    "window",
)


def play_episode(env: Any, seed: int, rule: str) -> dict[str, Any]:
    """One episode: ``reset(seed=seed)``, then actions by ``rule`` until terminated.
    Per step (columns): action, reward, terminated, truncated, obs digest, info scalars."""
    import numpy as np

    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    steps: dict[str, list[Any]] = {
        k: []
        for k in ("action", "reward", "terminated", "truncated", "n_valid")
        + tuple(f"obs_{k}" for k in ("sha256", "sum", "rows"))
        + tuple(f"info_{k}" for k in _STEP_INFO)
    }
    col_sums: list[list[float]] = []
    reset = {
        "obs": _obs_summary(obs),
        "info": {k: info[k] for k in _STEP_INFO if k in info},
        "valid": np.flatnonzero(info["action_mask"]).tolist(),
    }
    terminated = truncated = False
    while not (terminated or truncated):
        valid = np.flatnonzero(info["action_mask"])
        a = int(valid[0]) if rule == "first" else int(valid[rng.integers(len(valid))])
        obs, reward, terminated, truncated, info = env.step(a)
        s = _obs_summary(obs)
        steps["action"].append(a)
        steps["reward"].append(float(reward))
        steps["terminated"].append(bool(terminated))
        steps["truncated"].append(bool(truncated))
        steps["n_valid"].append(int(np.count_nonzero(info["action_mask"])))
        steps["obs_sha256"].append(s["sha256"])
        steps["obs_sum"].append(s["sum"])
        steps["obs_rows"].append(s["rows"])
        col_sums.append(s["col_sums"])
        for k in _STEP_INFO:
            steps[f"info_{k}"].append(info.get(k))
        if len(steps["action"]) > 100_000:
            raise RuntimeError("episode does not end")
    final = {k: v for k, v in info.items() if k != "action_mask" and k not in _STEP_INFO}
    return {
        "seed": seed,
        "rule": rule,
        "reset": reset,
        "steps": steps,
        "obs_col_sums_total": [float(sum(c)) for c in zip(*col_sums, strict=True)],
        "n_steps": len(steps["action"]),
        "return": float(sum(steps["reward"])),
        "final_info": final,
    }


def _env_recipe(key: str) -> dict[str, Any]:
    import gymnasium as gym

    import hpcgym  # noqa: F401  (registers hpcgym/Backfill-v0)

    episodes: dict[str, Any] = {}
    for label, kwargs, seeds, rule in ENV_CONFIGS[key]:
        env = gym.make("hpcgym/Backfill-v0", **kwargs)
        try:
            eps = [play_episode(env, s, rule) for s in seeds]  # resets of one env
            episodes[label] = {
                "make": {k: v for k, v in kwargs.items()},
                "observation_space": {
                    "shape": list(env.observation_space.shape),
                    "dtype": str(env.observation_space.dtype),
                },
                "action_space_n": int(env.action_space.n),
                "episodes": eps,
            }
        finally:
            env.close()
    return {"episodes.json": normalize_json(episodes)}


def env_synthetic(work: Path) -> dict[str, Any]:
    """``gym.make("hpcgym/Backfill-v0", ...)`` on the 10,000-job synthetic workload:
    guarded FCFS, first valid action, seeds 2 and 4 (two resets of one env; seed 4's
    window has no decision point: one STOP step); free FCFS, random valid action, EASY
    normalizer; guarded SJF, objective ``wait``, online feature predictor ``ave2``,
    K = 16, test split. Windows of 256 jobs (see :data:`ENV_CONFIGS`)."""
    return _env_recipe("env_synthetic")


def env_lublin1(work: Path) -> dict[str, Any]:
    """Env episodes on Lublin-1: guarded FCFS with the first valid action; free SJF
    with random valid actions and no normalizer (raw -AVEbsld terminal reward)."""
    return _env_recipe("env_lublin1")


def env_sdsc(work: Path) -> dict[str, Any]:
    """Env episodes on SDSC-SP2 (requests != runtimes): penalized FCFS with the
    ``ave2`` engine estimator, ``hmm`` feature predictor, K = 32, random valid actions
    (violations and penalties); guarded WFP3 with objective ``utilization``, the
    ``actual`` feature column and the first valid action. (``feature_predictor="eloss"``
    cannot be recorded: it raises "E-Loss: job 1 finished but was never predicted" at
    reset.)"""
    return _env_recipe("env_sdsc")


# ------------------------------------------------------------------ python sim API
SIM_SCHEDULERS = (
    "EASY",
    "EASY-AR",
    "EASY-SJBF",
    "EASY++",
    "ELOSS",
    "EASY-HMM",
    "WFP3+EASY",
    "SJF+EASY",
    "CONSERVATIVE",
    "SAF",
    "policy=F1,backfill=sjbf,estimate=actual,correction=doubling",
)


def _sim_record(res: Any) -> dict[str, Any]:
    return {
        "metrics": normalize_json(dict(res.metrics)),
        "counters": normalize_json(dict(res.counters)),
        "config": normalize_json(dict(res.config)),
        "start": array_digest(res.start),
        "backfilled": array_digest(res.backfilled),
    }


def _sim_recipe(trace: str | None, windows: list[tuple[int, int]], whole: bool) -> dict:
    from hpcgym.sim import get_scheduler, simulate
    from hpcgym.workload import load

    wl = load(trace)
    out: dict[str, Any] = {"trace": wl.name, "jobs": len(wl), "machine_size": wl.machine_size}
    if whole:
        out["whole_trace_FCFS_easy"] = _sim_record(simulate(wl, policy="FCFS", backfill="easy"))
    for start, length in windows:
        w = wl.window(start, length)
        rec: dict[str, Any] = {
            "simulate(FCFS, easy)": _sim_record(simulate(w, policy="FCFS", backfill="easy")),
            "simulate(SJF, conservative, actual)": _sim_record(
                simulate(w, policy="SJF", backfill="conservative", estimate="actual")
            ),
        }
        for name in SIM_SCHEDULERS:
            spec = get_scheduler(name)
            rec[name] = {"spec": normalize_json(spec.to_dict()), **_sim_record(spec.simulate(w))}
        out[f"window_{start}_{length}"] = rec
    return {"sim.json": out}


def sim_api_synthetic(work: Path) -> dict[str, Any]:
    """``hpcgym.sim.simulate(window, ...)`` and ``get_scheduler(name).simulate(window)``
    (default seed) for :data:`SIM_SCHEDULERS` on two 512-job windows (starts 500 and
    8000) of the 10,000-job synthetic workload (:data:`SYNTHETIC_10K`): metrics,
    counters, config and digests of the start times and backfilled flags."""
    return _sim_recipe(SYNTHETIC_10K, [(500, 512), (8000, 512)], whole=False)


def sim_api_sdsc(work: Path) -> dict[str, Any]:
    """As ``sim_api_synthetic`` on SDSC-SP2 windows (2000, 512) and (40000, 512), plus
    the README's whole-trace ``simulate(load("SDSC-SP2"), policy="FCFS",
    backfill="easy")``."""
    return _sim_recipe("SDSC-SP2", [(2000, 512), (40000, 512)], whole=True)


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe("compare_sdsc", compare_sdsc, ("SDSC-SP2",)),
        Recipe("compare_synthetic", compare_synthetic),
        Recipe("table4", table4, ("SDSC-SP2", "Lublin-1")),
        Recipe("table5", table5, ("SDSC-SP2", "Lublin-1", "Lublin-2")),
        Recipe("cli_compare", cli_compare, ("SDSC-SP2",)),
        Recipe("cli_simulate", cli_simulate, ("SDSC-SP2", "CTC-SP2")),
        Recipe("env_synthetic", env_synthetic),
        Recipe("env_lublin1", env_lublin1, ("Lublin-1",)),
        Recipe("env_sdsc", env_sdsc, ("SDSC-SP2",)),
        Recipe("sim_api_synthetic", sim_api_synthetic),
        Recipe("sim_api_sdsc", sim_api_sdsc, ("SDSC-SP2",)),
    )
}


def missing_traces(recipe: Recipe) -> list[str]:
    """The traces of ``recipe`` that are not available locally (never downloads)."""
    from hpcgym.workload.traces import TraceNotFoundError, resolve_trace

    missing = []
    for t in recipe.traces:
        try:
            resolve_trace(t, download=False)
        except TraceNotFoundError:
            missing.append(t)
    return missing


def run_recipe(name: str, work: Path | None = None) -> dict[str, Any]:
    """The normalised outputs of recipe ``name`` (``work``: a scratch folder)."""
    if work is not None:
        work.mkdir(parents=True, exist_ok=True)
        return RECIPES[name].run(work)
    with tempfile.TemporaryDirectory(prefix=f"golden-{name}-") as d:
        return RECIPES[name].run(Path(d))


# ======================================================================= main
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python tests/golden/record.py",
        description="(Re)record the golden outputs of tests/test_golden.py.",
    )
    p.add_argument("names", nargs="*", help="recipes (default: all)")
    p.add_argument("--list", action="store_true", help="list the recipes and exit")
    p.add_argument("--check", action="store_true", help="compare instead of recording")
    args = p.parse_args(argv)
    if args.list:
        for r in RECIPES.values():
            print(f"{r.name:18s} traces: {', '.join(r.traces) or '-':28s} {r.doc.splitlines()[0]}")
        return 0
    names = args.names or list(RECIPES)
    unknown = [n for n in names if n not in RECIPES]
    if unknown:
        p.error(f"unknown recipe(s) {unknown}; valid: {', '.join(RECIPES)}")
    status = 0
    import time

    for n in names:
        miss = missing_traces(RECIPES[n])
        if miss:
            print(f"{n}: SKIPPED, traces not available: {', '.join(miss)}", file=sys.stderr)
            status = 1
            continue
        t0 = time.perf_counter()
        files = run_recipe(n)
        dt = time.perf_counter() - t0
        if args.check:
            golden = load_golden(n)
            errs = compare_outputs(n, golden, files) if golden else ["never recorded"]
            print(f"{n}: {'OK' if not errs else 'DIFFERS'} ({dt:.1f} s)")
            for e in errs:
                print(f"  {e}")
            status |= bool(errs)
        else:
            paths = write_golden(n, files)
            print(f"{n}: wrote {len(paths)} file(s) to tests/golden/{n}/ ({dt:.1f} s)")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
