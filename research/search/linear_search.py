"""Direct policy search: CMA-ES over a linear score of the env's observation columns.

PPO learns a backfilling policy from per-decision rewards and has to assign the credit of
a window's AVEbsld to hundreds of decisions. This module searches a much smaller policy
family by its real objective instead: every candidate job ``i`` (a valid row of the
observation) gets the score

    ``s_i = sum_c w_c * x_ic - sum_c min(w_c, 0)``

over chosen observation columns ``c``, STOP gets the constant ``b``, and the policy takes
the highest (ties: the lowest row, then a row before STOP). That is exactly the initial
policy of ``train/ppo.py --row-prior c=w_c,... --stop-init b`` (the kernel's output
starts at 0 with a prior: :class:`~hpcgym_agents.kernel_policy.KernelNetwork.prior`), so
a found ``(w, b)`` ships as a standard run with ``--total-steps 0`` and everything of
``eval/`` (checkpoint selection, cards, held-out tests) applies to it unchanged; PPO can
also start from it. ``estimate=-50`` with ``b = -3`` is EASY-SJBF's backfilling. With
``hidden`` units (``research/search/search.py --hidden H``) the score gains a hidden layer of the
same columns, played by the shipped network itself (:mod:`research.search.kernel_score`).

The objective of ``(w, b)`` is the one the held-out claims use: the mean over windows of
``ln(AVEbsld_policy / AVEbsld_reference)`` (the log of the paired geometric-mean ratio)
on ``windows`` windows of ``length`` jobs of the TRAIN split (never validation or test),
redrawn every generation (all candidates of a generation on the same windows), the
reference being the run's ``--reference`` (EASY-SJBF with ``--reference none``). The
windows are played by :func:`hpcgym.evaluation.play.play_windows`, the loop that scores
every agent, on the same env (and engine) that PPO trains on. With ``--mix-traces`` the
windows are spread over the traces of the mix as PPO's sub-envs are (window ``i`` on
trace ``i mod k``, each against the reference on its own trace's train split), so a
search can learn from more jobs than one trace's train split holds.

CMA-ES is the ``cma`` package's (N. Hansen's reference implementation), with its random
draws from a seeded ``numpy.random.Generator``. The argmax is invariant to a positive
factor on ``(w, b)``, so every candidate is scaled to the norm of the start before it is
played: the search runs on a sphere, and the weights it writes are the ones played.

Every generation records two figures of CMA-ES's mean: ``mean_policy``, the mean after
the update scored on the windows that made the update (in-sample, so biased low), and
``mean_fresh``, the mean entering the generation scored on the same windows, which it
was not fitted to (an unbiased reading of where the search stands on the train range).
``bench/search_curve.py`` replays the means on fixed validation windows.
"""

from __future__ import annotations

import json
import math
import pickle
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.envs.features import has_extended
from hpcgym.evaluation.cards import SEARCH_FILE
from hpcgym.evaluation.play import play_windows
from hpcgym.evaluation.runner import run_baselines
from hpcgym.evaluation.windows import select_windows
from hpcgym_agents.heuristic import valid_and_stop
from research.search.kernel_score import (
    KernelScore,
    hidden_start,
    normalized,
    output_size,
    split_vector,
    vector_size,
)
from train.build import env_kwargs
from train.config import ConfigError, TrainConfig
from train.evaluator import ratio_reference

__all__ = [
    "GaussianDraws",
    "LinearScore",
    "SearchProblem",
    "parse_weights",
    "prior_option",
    "search",
]

#: The state file of a search (CMA-ES, generation, history); ``--resume`` reads it.
STATE_FILE = "search_state.pkl"
#: The result of a search (weights, the ``train/ppo.py`` command that ships them); the
#: model card of the shipped run reads it (:func:`hpcgym.evaluation.cards.search_section`).
RESULT_FILE = SEARCH_FILE


@dataclass
class LinearScore:
    """The linear backfilling policy: SB3's ``predict`` for
    :func:`~hpcgym.evaluation.play.play_windows`, equal to ``KernelPolicy`` with
    ``row_prior = zip(columns, weights)``, ``stop_init = stop`` and the kernel's output at 0.

    :param columns: observation columns of the score (not 0, the validity flag)
    :param weights: one weight per column (used in float32, as the network stores them)
    :param stop: STOP's score
    """

    columns: Sequence[int]
    weights: np.ndarray
    stop: float

    def __post_init__(self) -> None:
        import torch as th

        self.columns = [int(c) for c in self.columns]
        self.weights = np.asarray(self.weights, dtype=np.float32).reshape(len(self.columns))
        self.stop = float(np.float32(self.stop))
        self._w = th.tensor([float(w) for w in self.weights])  # as KernelPolicy stores them

    def scores(self, observation: np.ndarray) -> np.ndarray:
        """The rows' scores ``(N, K)`` of observations ``(N, K, F)`` (padding included),
        computed with KernelPolicy's own float32 operations (:meth:`KernelPolicy.prior`),
        so that rounding, and with it every near-tie, comes out the same as in the
        shipped model (numpy's float32 sums round differently in a third of the rows)."""
        import torch as th

        x = th.as_tensor(np.asarray(observation, dtype=np.float32))[..., self.columns]
        return ((x * self._w).sum(dim=-1) - self._w.clamp(max=0.0).sum()).numpy()

    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, None]:
        """The highest-scoring allowed action (row ``K`` is STOP; ties: the lowest index).

        :param observation: ``(K, F)`` or ``(N, K, F)``
        :param action_masks: ``(K + 1,)`` or ``(N, K + 1)`` bool (``None``: the valid rows
            and STOP)
        :param deterministic: ignored (the policy is deterministic)
        :return: ``(actions, None)``
        """
        obs = np.asarray(observation)
        single = obs.ndim == 2
        if single:
            obs = obs[None]
        n, k, _ = obs.shape
        logits = np.empty((n, k + 1), dtype=np.float32)
        logits[:, :k] = self.scores(obs)
        logits[:, k] = self.stop
        masks = valid_and_stop(obs) if action_masks is None else action_masks
        mask = np.asarray(masks, dtype=bool).reshape(n, k + 1)
        actions = np.where(mask, logits, -np.inf).argmax(axis=1)
        return (actions[0] if single else actions), None


def parse_weights(text: str, names: Sequence[str]) -> dict[str, float]:
    """``NAME=WEIGHT[,...]`` (the form of ``--row-prior``) as a dict, checked against the
    run's column ``names``.

    :raises ConfigError: a malformed pair, an unknown column (the valid ones listed) or a
        column given twice
    """
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        if not eq:
            raise ConfigError(f"expected NAME=WEIGHT, got {part!r}")
        if name not in names:
            raise ConfigError(
                f"{name!r} is not an observation column; expected one of {', '.join(names)}"
            )
        if name in out:
            raise ConfigError(f"column {name!r} given twice in {text!r}")
        try:
            out[name] = float(value)
        except ValueError:
            raise ConfigError(f"{part!r}: {value!r} is not a number") from None
        if not math.isfinite(out[name]):
            raise ConfigError(f"{part!r}: the weight must be finite")
    return out


def short(value: float) -> float:
    """``value`` to the 6 significant digits of ``--row-prior``'s normal form (``%g``),
    so that a candidate is played with exactly the weights its command line gives."""
    return float(f"{float(value):g}")


def prior_option(names: Sequence[str], weights: Sequence[float], keep_zero: bool = False) -> str:
    """The ``--row-prior`` value of these weights (``name=weight,...`` in ``%g``, the
    option's normal form); a weight of exactly 0 is left out (its term is 0) unless
    ``keep_zero`` (a ``--hidden`` search's prior has every searched column, so the shipped
    network has the shape its weights are loaded into)."""
    return ",".join(
        f"{n}={float(w):g}"
        for n, w in zip(names, weights, strict=True)
        if keep_zero or float(w) != 0.0
    )


class GaussianDraws:
    """CMA-ES's ``randn`` option from a seeded ``numpy.random.Generator`` (picklable, so a
    resumed search continues the same stream).

    :param seed: the generator's seed
    """

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, *shape: int) -> np.ndarray:
        return self.rng.standard_normal(shape)


@dataclass
class SearchProblem:
    """The search's objective on one run's env: windows of the train split, the
    reference's AVEbsld on them, the candidates played on the same windows.

    Build it with :meth:`for_config`.

    :param cfg: the run's options (env, queue policy, reference)
    :param names: the searched columns' names
    :param columns: their indices in the observation
    :param envs: one env per window (reused every generation)
    :param n_jobs: jobs in the trace
    :param workload: the trace (for the reference scheduler)
    :param length: jobs per window
    :param seed: seed of the windows' draws
    :param reference: the reference scheduler's name
    :param split: the split the windows are drawn from (``train``; ``validation`` to
        look at a search from outside, as ``bench/search_curve.py`` does)
    :param hidden: hidden units of the score (0: the linear score; ``H``: the
        one-hidden-layer score of :mod:`research.search.kernel_score`)
    :param others: the other traces' workloads of a trace mix (``--mix-traces``): window
        ``i`` is played on trace ``i mod k`` of the ``k = 1 + len(others)`` traces (the
        run's ``--trace`` first), each window drawn from its own trace's ``split``, each
        scored against the reference on its own trace, all in ``--trace``'s observation
        units (:func:`hpcgym.envs.vector.trace_mix`, as ``train/ppo.py``'s mix)
    """

    cfg: TrainConfig
    names: list[str]
    columns: list[int]
    envs: list[Any]
    n_jobs: int
    workload: Any
    length: int
    seed: int
    reference: str
    split: str = "train"
    others: list[Any] = field(default_factory=list)
    hidden: int = 0
    _ref_cache: dict[tuple[int, int], float] = field(default_factory=dict)

    @property
    def traces(self) -> int:
        """Traces the windows are played on (1 without a mix)."""
        return 1 + len(self.others)

    @classmethod
    def for_config(
        cls,
        cfg: TrainConfig,
        names: Sequence[str],
        windows: int,
        length: int,
        seed: int,
        split: str = "train",
        mix: bool = True,
        hidden: int = 0,
    ) -> SearchProblem:
        """:param cfg: the run's options
        :param names: columns of the score (the run's observation columns, not ``valid``)
        :param windows: windows per generation
        :param length: jobs per window
        :param seed: seed of the windows' draws
        :param split: the split of the windows (the search's own: ``train``)
        :param mix: play the run's trace mix (``cfg.mix_traces``), as the search does;
            ``False``: ``--trace`` alone, for a look at the search from outside
        :param hidden: hidden units of the score (0: linear)
        :raises ConfigError: an unknown column, a trace that does not load, windows that do
            not fit in the split, fewer windows than traces, a hidden layer with a STOP
            score or row context that is not a constant or per-row one
        """
        from hpcgym.envs.backfill_env import BackfillEnv
        from hpcgym.envs.observation import column_names
        from hpcgym.envs.vector import trace_mix
        from hpcgym.workload import TraceNotFoundError, UnknownTraceError, trace_spec

        all_names = column_names(cfg.feature_predictor is not None, has_extended(cfg.features))
        bad = [n for n in names if n not in all_names[1:]]
        if bad or not names:
            raise ConfigError(
                f"--columns: {', '.join(bad) or 'none given'}; expected observation columns "
                f"of this run (--features {cfg.features}, --feature-predictor "
                f"{cfg.feature_predictor}): {', '.join(all_names[1:])}"
            )
        if len(set(names)) != len(names):
            raise ConfigError(f"--columns: a column is given twice: {', '.join(names)}")
        if hidden < 0:
            raise ConfigError(f"--hidden {hidden}: expected 0 (linear) or more units")
        if hidden and (cfg.stop_score == "pooled" or cfg.row_context != "none"):
            raise ConfigError(
                f"--hidden {hidden}: the searched score is per row with a constant STOP; "
                f"use --stop-score learned or fixed (not {cfg.stop_score}) and --row-context "
                f"none (not {cfg.row_context})"
            )
        if split not in ("train", "validation"):
            raise ConfigError(f"split {split!r}: expected train or validation")
        if cfg.load_weighting > 0:
            raise ConfigError(
                "--load-weighting: a search draws its windows uniformly from the split "
                "(eval's windows); leave it at 0"
            )
        kw = env_kwargs(cfg, split, length)
        mixed = list(cfg.mix_traces) if mix else []
        if windows < 1 + len(mixed):
            raise ConfigError(
                f"--windows {windows}: a mix of {1 + len(mixed)} traces needs at least one "
                "window per trace"
            )
        try:
            if mixed:
                kw["trace"] = [kw["trace"], *(trace_spec(t) for t in mixed)]
            kws = trace_mix(kw)
            envs = [BackfillEnv(**kws[i % len(kws)]) for i in range(windows)]
        except (TraceNotFoundError, UnknownTraceError, FileNotFoundError) as exc:
            which = "--trace/--mix-traces" if mixed else "--trace"
            raise ConfigError(f"{which} {cfg.trace!r}: {exc}") from None
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        workload = envs[0].workload
        problem = cls(
            cfg,
            list(names),
            [all_names.index(n) for n in names],
            envs,
            len(workload),
            workload,
            length,
            seed,
            ratio_reference(cfg),
            split,
            [envs[j].workload for j in range(1, len(kws))],
            hidden,
        )
        problem.draw(0)  # the windows fit (or a clear error now, not mid-search)
        return problem

    def draw(self, generation: int) -> list[int]:
        """The window starts of ``generation`` (drawn with a seed derived from
        :attr:`seed` and the generation).

        :raises ConfigError: the windows do not fit in the split
        """
        return self.windows_at(
            int(np.random.default_rng([self.seed, generation]).integers(2**31 - 1))
        )

    def windows_at(self, seed: int) -> list[int]:
        """The window starts that window seed ``seed`` gives in the split: the windows of
        ``eval/select_checkpoint.py --seed`` on the validation split.

        :raises ConfigError: the windows do not fit in the split
        """
        k = self.traces
        n = len(self.envs)
        sizes = [self.n_jobs, *(len(w) for w in self.others)]
        per: list[list[int]] = []
        for j in range(k):
            # trace 0 keeps the seed (a search without a mix draws exactly these)
            s = seed if j == 0 else int(np.random.default_rng([seed, j]).integers(2**31 - 1))
            try:
                ws = select_windows(
                    sizes[j],
                    self.length,
                    len(range(j, n, k)),
                    self.split,
                    s,
                    self.cfg.train_fraction,
                    validation_fraction=self.cfg.validation_fraction,
                )
            except ValueError as exc:
                where = f" on mix trace {self.cfg.mix_traces[j - 1]!r}" if j else ""
                raise ConfigError(f"search windows (--windows/--length){where}: {exc}") from None
            per.append([int(x) for x in ws.starts])
        return [per[i % k][i // k] for i in range(n)]

    def reference_values(self, starts: Sequence[int]) -> np.ndarray:
        """The reference's AVEbsld on each window (each window's run cached).

        :raises ConfigError: the reference cannot run on this trace
        """
        k = self.traces
        keys = [(i % k, int(s)) for i, s in enumerate(starts)]
        workloads = [self.workload, *self.others]
        for j in range(k):
            todo = sorted({s for t, s in keys if t == j and (t, s) not in self._ref_cache})
            if not todo:
                continue
            res, skipped = run_baselines(
                workloads[j], todo, self.length, [self.reference], self.cfg.policy
            )
            if self.reference not in res:
                raise ConfigError(
                    f"the reference {self.reference!r} cannot run: "
                    f"{skipped.get(self.reference, 'unknown reason')}"
                )
            for s, v in zip(todo, res[self.reference]["per_window"], strict=True):
                self._ref_cache[(j, s)] = float(v)
        return np.array([self._ref_cache[key] for key in keys])

    def candidate(self, x: Sequence[float], radius: float) -> LinearScore | KernelScore:
        """The policy of the searched vector ``x``: its output part scaled to norm
        ``radius`` (the argmax does not depend on that scale), every number to
        :func:`short`'s 6 digits; a :class:`LinearScore` or, with :attr:`hidden` units, a
        :class:`~research.search.kernel_score.KernelScore`."""
        n = len(self.columns)
        y = normalized(x, n, self.hidden, radius, short)
        if not self.hidden:
            return LinearScore(self.columns, y[:-1], float(y[-1]))
        rows, features = self.envs[0].observation_space.shape
        return KernelScore(self.columns, y, self.hidden, rows, features, self.cfg.stop_score)

    def play(self, policy: LinearScore | KernelScore, starts: Sequence[int]) -> np.ndarray:
        """``policy``'s AVEbsld on each window."""
        rows = play_windows(self.envs, policy, starts, seed=0)
        return np.array([float(r["avg_bsld"]) for r in rows])

    def log_ratios(self, policy: LinearScore | KernelScore, starts: Sequence[int]) -> np.ndarray:
        """``ln(AVEbsld_policy / AVEbsld_reference)`` on each window."""
        return np.log(self.play(policy, starts)) - np.log(self.reference_values(starts))


#: The problem of a worker process of :class:`Evaluations` (built once per worker).
_WORKER: SearchProblem | None = None


def _init_worker(
    cfg: dict[str, Any], names: list[str], windows: int, length: int, split: str, mix: bool
) -> None:
    global _WORKER
    _WORKER = SearchProblem.for_config(
        TrainConfig.from_dict(cfg), names, windows, length, 0, split, mix
    )


def _play_in_worker(task: tuple[LinearScore | KernelScore, list[int]]) -> list[float]:
    policy, starts = task
    assert _WORKER is not None
    return _WORKER.play(policy, starts).tolist()


class Evaluations:
    """Mean log ratios of candidates on one set of windows, in this process or in
    ``jobs`` worker processes (each with its own envs; the same values either way, as
    every window is played deterministically).

    :param problem: the objective
    :param jobs: worker processes (1: none)
    """

    def __init__(self, problem: SearchProblem, jobs: int = 1) -> None:
        self.problem = problem
        self.pool: Any = None
        if jobs > 1:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(
                jobs,
                mp_context=mp.get_context("spawn"),
                initializer=_init_worker,
                initargs=(
                    problem.cfg.to_dict(),
                    problem.names,
                    len(problem.envs),
                    problem.length,
                    problem.split,
                    problem.traces > 1,
                ),
            )

    def played(
        self, policies: Sequence[LinearScore | KernelScore], starts: list[int]
    ) -> list[np.ndarray]:
        """Each policy's AVEbsld on each window."""
        if self.pool is None:
            return [self.problem.play(p, starts) for p in policies]
        tasks = [(p, starts) for p in policies]
        return [np.array(v) for v in self.pool.map(_play_in_worker, tasks)]

    def mean_log_ratios(
        self, policies: Sequence[LinearScore | KernelScore], starts: list[int]
    ) -> list[float]:
        """``mean(ln(AVEbsld / AVEbsld_reference))`` over the windows, per policy."""
        ref = np.log(self.problem.reference_values(starts))
        return [float((np.log(v) - ref).mean()) for v in self.played(policies, starts)]

    def close(self) -> None:
        """Stop the worker processes."""
        if self.pool is not None:
            self.pool.shutdown()


def _hidden_result(final: KernelScore) -> dict[str, Any]:
    """The hidden layer of a ``--hidden`` search's result: ``hidden`` units, the ``vector``
    as played (:func:`~research.search.kernel_score.split_vector`'s layout) and its parts."""
    _, _, v, big_w, a = split_vector(final.vector, len(final.columns), final.hidden)
    return {
        "hidden": final.hidden,
        "vector": [float(x) for x in final.vector],
        "hidden_layer": {"W": big_w.tolist(), "a": a.tolist(), "v": v.tolist()},
    }


def _save_state(path: Path, state: Mapping[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        pickle.dump(dict(state), fh)
    tmp.replace(path)


def search(
    problem: SearchProblem,
    start: Mapping[str, float],
    stop_init: float,
    *,
    out: Path,
    sigma: float = 0.2,
    popsize: int | None = None,
    generations: int = 100,
    time_limit: float | None = None,
    resume: bool = False,
    jobs: int = 1,
    log: Callable[[dict[str, Any]], None] | None = None,
    hidden_sigma: float = 0.5,
) -> dict[str, Any]:
    """Run (or continue) CMA-ES on ``problem`` from ``start``; write the state after every
    generation and the result at the end.

    :param problem: the objective
    :param start: the starting weights by column name (the others start at 0)
    :param stop_init: STOP's starting score
    :param out: the search's folder (:data:`STATE_FILE`, :data:`RESULT_FILE`)
    :param sigma: CMA-ES's initial step size, as a fraction of the start's norm
    :param popsize: candidates per generation (``None``: CMA-ES's default, ``4 + 3 ln n``)
    :param generations: generations in all (a resumed search counts those done)
    :param time_limit: minutes for this call (stops after the generation that passes it)
    :param resume: continue the state in ``out``
    :param jobs: processes playing the candidates (:class:`Evaluations`)
    :param log: called with every generation's record
    :param hidden_sigma: with :attr:`SearchProblem.hidden` units, CMA-ES's initial step
        of the hidden layer's weights and biases (absolute: they are not scaled)
    :return: the result (also written to ``out/search.json``)
    """
    import cma

    out.mkdir(parents=True, exist_ok=True)
    state_path = out / STATE_FILE
    n, hidden = len(problem.names), problem.hidden
    x0 = np.array([float(start.get(n, 0.0)) for n in problem.names] + [float(stop_init)])
    radius = float(np.linalg.norm(x0))
    if hidden:
        x0 = np.concatenate([x0, hidden_start(n, hidden, problem.seed)])
    if radius == 0:
        raise ConfigError("the start's weights and STOP score are all 0: give --init")
    if resume:
        try:
            with open(state_path, "rb") as fh:
                state = pickle.load(fh)
        except FileNotFoundError:
            raise ConfigError(f"--resume: {state_path} is missing (start a new search)") from None
        if state["names"] != problem.names:
            raise ConfigError(
                f"--resume: the search in {out} has the columns {state['names']}, "
                f"not {problem.names}"
            )
        if state.get("hidden", 0) != hidden:
            raise ConfigError(
                f"--resume: the search in {out} has --hidden {state.get('hidden', 0)}, not {hidden}"
            )
        es, history, radius = state["es"], state["history"], state["radius"]
    else:
        if state_path.exists():
            raise ConfigError(f"{out} already holds a search: --resume it or choose another --out")
        opts = {
            "popsize": popsize,
            "seed": math.nan,  # numpy's global state is not touched ...
            "randn": GaussianDraws(problem.seed),  # ... the draws come from a Generator
            "verbose": -9,
            "tolflatfitness": 10**9,  # argmax policies: equal candidates are common
            "tolfun": 0,
            "tolfunhist": 0,
            "tolx": 0,
            "tolstagnation": 10**9,
        }
        if hidden:  # the hidden part's own step: hidden_sigma, not a share of the radius
            m = output_size(n, hidden)
            stds = np.ones(vector_size(n, hidden))
            stds[m:] = hidden_sigma / (sigma * radius)
            opts["CMA_stds"] = stds
        es = cma.CMAEvolutionStrategy(
            x0, sigma * radius, {k: v for k, v in opts.items() if v is not None}
        )
        history = []
    t0 = time.monotonic()
    evals = Evaluations(problem, jobs)
    try:
        while len(history) < generations:
            g = len(history)
            t_gen = time.monotonic()
            starts = problem.draw(g)
            before = np.asarray(es.mean, dtype=np.float64)
            xs = es.ask()
            *values, fresh_value = evals.mean_log_ratios(
                [problem.candidate(x, radius) for x in [*xs, before]], starts
            )
            es.tell(xs, values)
            mean = np.asarray(es.mean, dtype=np.float64)
            (mean_value,) = evals.mean_log_ratios([problem.candidate(mean, radius)], starts)
            record = {
                "generation": g,
                "starts": starts,
                "best": float(np.exp(min(values))),
                "median": float(np.exp(np.median(values))),
                "mean_policy": float(np.exp(mean_value)),
                "mean_fresh": float(np.exp(fresh_value)),
                "sigma": float(es.sigma),
                "seconds": time.monotonic() - t_gen,
                "x_mean": [float(v) for v in mean],
            }
            history.append(record)
            _save_state(
                state_path,
                {
                    "es": es,
                    "history": history,
                    "radius": radius,
                    "names": problem.names,
                    "hidden": hidden,
                },
            )
            if log is not None:
                log(record)
            if time_limit is not None and time.monotonic() - t0 > 60.0 * time_limit:
                break
    finally:
        evals.close()
    final = problem.candidate(np.asarray(es.mean, dtype=np.float64), radius)
    result = {
        "names": problem.names,
        "weights": {n: short(w) for n, w in zip(problem.names, final.weights, strict=True)},
        "row_prior": prior_option(problem.names, final.weights, keep_zero=bool(hidden)),
        "stop_init": short(final.stop),
        **(_hidden_result(final) if isinstance(final, KernelScore) else {}),
        "generations": len(history),
        "finished": len(history) >= generations,
        "reference": problem.reference,
        "length": problem.length,
        "windows": len(problem.envs),
        "seed": problem.seed,
        **({"traces": [problem.cfg.trace, *problem.cfg.mix_traces]} if problem.traces > 1 else {}),
        "history": [{k: v for k, v in r.items() if k not in ("starts", "x_mean")} for r in history],
    }
    (out / RESULT_FILE).write_text(json.dumps(result, indent=1) + "\n")
    return result
