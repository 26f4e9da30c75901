"""Teacher-labelled decision points: a teacher's choice at every env decision.

Teachers (:data:`TEACHERS`): ``lookahead-oracle`` (default, clairvoyant, below),
``lookahead`` (:class:`~hpcgym.sim.lookahead.Lookahead`, the online one-step lookahead over
Monte Carlo futures drawn from the past: non-clairvoyant, a scheduler a site could run;
its options, e.g. ``samples`` and ``match``, come as ``teacher`` keyword arguments, and
each teacher it makes gets its own ``seed`` from the collection's generator unless one is
given) and ``prediction-order`` (:class:`PredictionOrder`: the shown candidate with the
shortest feature prediction, never STOP -- the greedy policy of the env's own
``prediction`` column, online; a start for PPO, not a bound). The lookaheads decide on
the env's own simulation, so under the env's estimator and corrections (e.g. ELOSS's
predicted reservations) they choose among exactly the candidates the agent may choose.

An episode is played on a :class:`~hpcgym.envs.backfill_env.BackfillEnv` (the TRAIN
split: the windows are drawn by the env itself). At each decision point the teacher
(:class:`~hpcgym.sim.lookahead.LookaheadOracle`, clairvoyant) is asked for its choice on the
env's own simulation (``env.simulation``; the oracle only reads it and rolls out clones);
the chosen job is mapped to its observation row (STOP -> action ``K``) and the sample
``(observation rows, label)`` is stored. The student only ever sees the observation.

Who acts: with probability ``beta`` the teacher's choice, otherwise the student's
(DAgger). Whenever the executed action is not the teacher's choice, the oracle is
replaced by a fresh one, because its ``reuse`` shortcut assumes that the previous
decision took its own choice (this keeps the labels exact).

Storage is compact: only the shown candidate rows of each observation are kept
(``rows``, ragged with ``counts``); :meth:`Dataset.batch` pads them back to the env's
``(K, F)`` observation and builds the action mask (the shown rows and STOP) exactly as the
env does.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.sim.lookahead import Lookahead, LookaheadOracle

__all__ = ["TEACHERS", "CollectStats", "Dataset", "PredictionOrder", "collect", "sjbf_row"]

#: teacher names of :func:`collect`
TEACHERS: tuple[str, ...] = ("lookahead-oracle", "lookahead", "prediction-order")


class PredictionOrder:
    """Teacher: the shown candidate with the shortest feature prediction (ties by job
    index), never STOP. Non-clairvoyant: it reads only the env's ``prediction`` column
    source (:meth:`~hpcgym.envs.backfill_env.BackfillEnv.feature_predictions`).

    :param env: the env whose decisions are labelled (needs a ``feature_predictor``)
    """

    def __init__(self, env: BackfillEnv) -> None:
        if "prediction" not in env.feature_names:
            raise ValueError(
                "teacher 'prediction-order' needs an env with a feature predictor "
                '(e.g. --env-kwargs \'{"feature_predictor": "log-ridge:lam=10"}\')'
            )
        self.env = env
        self.counters = {"lookahead_rollouts": 0}

    def __call__(self, sim: Any) -> int | None:
        shown = self.env.candidate_jobs()
        shown = shown[shown >= 0]
        if len(shown) == 0:
            return None
        pred = self.env.feature_predictions()[shown]
        if np.isnan(pred).any():
            raise RuntimeError("a shown candidate has no feature prediction yet")
        return int(shown[np.lexsort((shown, pred))[0]])


def _teacher(
    kind: str, env: BackfillEnv, kwargs: dict[str, Any], rng: np.random.Generator | None = None
) -> Any:
    if kind == "lookahead-oracle":
        return LookaheadOracle(**kwargs)
    if kind == "lookahead":
        seed = int(rng.integers(2**31)) if rng is not None else 0
        return Lookahead(**{"seed": seed, **kwargs})
    if kind == "prediction-order":
        return PredictionOrder(env)
    raise ValueError(f"unknown teacher {kind!r}; valid choices: {', '.join(TEACHERS)}")


@dataclass
class Dataset:
    """Labelled decision points (ragged storage of the observation rows).

    :param rows: ``(R, F)`` float32: the shown candidate rows of every sample, concatenated
    :param counts: ``(N,)`` rows shown per sample (1..K)
    :param labels: ``(N,)`` the teacher's action (row index, or ``K`` = STOP)
    :param sjbf: ``(N,)`` the action of EASY-SJBF's own choice (shortest estimate first;
        ``-1`` if that job is not among the shown rows)
    :param episode: ``(N,)`` episode number of the sample (for held-out splits by episode)
    :param returns: ``(N,)`` the return of the sample's episode (the terminal reward)
    :param max_queue: ``K``
    """

    rows: np.ndarray
    counts: np.ndarray
    labels: np.ndarray
    sjbf: np.ndarray
    episode: np.ndarray
    returns: np.ndarray
    max_queue: int

    def __len__(self) -> int:
        return len(self.counts)

    @property
    def n_features(self) -> int:
        """``F``, columns of an observation row."""
        return int(self.rows.shape[1])

    @property
    def offsets(self) -> np.ndarray:
        """``(N + 1,)`` start of each sample's rows in :attr:`rows`."""
        return np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)

    @classmethod
    def empty(cls, max_queue: int, n_features: int) -> Dataset:
        """A dataset without samples.

        :param max_queue: ``K``
        :param n_features: ``F``
        """
        i = np.zeros(0, dtype=np.int64)
        return cls(np.zeros((0, n_features), np.float32), i, i, i, i, np.zeros(0), int(max_queue))

    def batch(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Observations, masks and labels of the samples ``index``, as the env gives them.

        :param index: sample indices
        :return: ``(B, K, F)`` float32 observations (padding rows all zero), ``(B, K + 1)``
            bool masks (the shown rows and STOP), ``(B,)`` int64 labels
        """
        index = np.asarray(index, dtype=np.int64)
        kq = self.max_queue
        off = self.offsets
        obs = np.zeros((len(index), kq, self.n_features), dtype=np.float32)
        mask = np.zeros((len(index), kq + 1), dtype=bool)
        mask[:, kq] = True
        for b, i in enumerate(index.tolist()):
            n = int(self.counts[i])
            obs[b, :n] = self.rows[off[i] : off[i + 1]]
            mask[b, :n] = True
        return obs, mask, self.labels[index]

    def subset(self, keep: np.ndarray) -> Dataset:
        """The samples where ``keep`` (bool ``(N,)``) is true."""
        keep = np.asarray(keep, dtype=bool)
        off = self.offsets
        row_keep = np.repeat(keep, self.counts)
        assert len(row_keep) == off[-1]
        return Dataset(
            self.rows[row_keep],
            self.counts[keep],
            self.labels[keep],
            self.sjbf[keep],
            self.episode[keep],
            self.returns[keep],
            self.max_queue,
        )

    @classmethod
    def concat(cls, parts: Sequence[Dataset]) -> Dataset:
        """The samples of ``parts`` in order (episode numbers are made distinct)."""
        if not parts:
            raise ValueError("nothing to concatenate")
        kq = {p.max_queue for p in parts}
        if len(kq) != 1:
            raise ValueError(f"datasets of different K: {sorted(kq)}")
        shift, episodes = 0, []
        for p in parts:
            episodes.append(p.episode + shift)
            shift += int(p.episode.max()) + 1 if len(p) else 0
        return cls(
            np.concatenate([p.rows for p in parts]),
            np.concatenate([p.counts for p in parts]),
            np.concatenate([p.labels for p in parts]),
            np.concatenate([p.sjbf for p in parts]),
            np.concatenate(episodes),
            np.concatenate([p.returns for p in parts]),
            kq.pop(),
        )

    def summary(self) -> dict[str, Any]:
        """Size and label statistics: samples, episodes, STOP share, share of labels equal
        to EASY-SJBF's choice (the accuracy of an agent that always copies EASY-SJBF)."""
        n = len(self)
        return {
            "samples": n,
            "episodes": int(len(np.unique(self.episode))),
            "stop_share": float(np.mean(self.labels == self.max_queue)) if n else 0.0,
            "sjbf_agreement": float(np.mean(self.labels == self.sjbf)) if n else 0.0,
            "mean_rows": float(self.counts.mean()) if n else 0.0,
        }

    def save(self, path: str | Path) -> None:
        """Write the dataset as a compressed ``.npz``."""
        np.savez_compressed(
            path,
            rows=self.rows,
            counts=self.counts,
            labels=self.labels,
            sjbf=self.sjbf,
            episode=self.episode,
            returns=self.returns,
            max_queue=np.int64(self.max_queue),
        )

    @classmethod
    def load(cls, path: str | Path) -> Dataset:
        """Read a dataset written by :meth:`save`."""
        with np.load(path) as z:
            return cls(
                z["rows"],
                z["counts"],
                z["labels"],
                z["sjbf"],
                z["episode"],
                z["returns"],
                int(z["max_queue"]),
            )


@dataclass
class CollectStats:
    """What a collection cost and saw.

    :param episodes: episodes played
    :param decisions: decision points met (the teacher was asked at each)
    :param samples: samples stored
    :param outside: decisions whose teacher choice was not among the ``K`` shown rows
        (not stored; STOP was executed instead)
    :param teacher_actions: decisions where the teacher's choice was executed
    :param disagreements: decisions where the student acted and chose otherwise
    :param oracle_seconds: time spent in the teacher's calls
    :param student_seconds: time spent in the student's ``predict`` calls
    :param seconds: wall time of the collection
    :param rollouts: EASY-SJBF rollouts the teacher ran
    :param episode_avg_bsld: AVEbsld of every episode (the executed mixture)
    :param episode_reference_avg_bsld: the reference's (EASY-SJBF) AVEbsld per episode
    """

    episodes: int = 0
    decisions: int = 0
    samples: int = 0
    outside: int = 0
    teacher_actions: int = 0
    disagreements: int = 0
    oracle_seconds: float = 0.0
    student_seconds: float = 0.0
    seconds: float = 0.0
    rollouts: int = 0
    episode_avg_bsld: list[float] = field(default_factory=list)
    episode_reference_avg_bsld: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The counters, the oracle's milliseconds per decision and the executed policy's
        geo-mean AVEbsld ratio vs the reference over the episodes (training windows)."""
        out: dict[str, Any] = {k: v for k, v in self.__dict__.items() if not isinstance(v, list)}
        out["oracle_ms_per_decision"] = 1e3 * self.oracle_seconds / max(self.decisions, 1)
        out["rollouts_per_decision"] = self.rollouts / max(self.decisions, 1)
        x = np.asarray(self.episode_avg_bsld)
        r = np.asarray(self.episode_reference_avg_bsld)
        ok = (x > 0) & (r > 0)
        out["executed_geo_ratio_vs_reference"] = (
            float(np.exp(np.mean(np.log(x[ok] / r[ok])))) if ok.any() else None
        )
        return out


def sjbf_row(sim: Any, rows: np.ndarray) -> int:
    """The row of EASY-SJBF's own choice (the EASY-allowed candidate with the shortest
    estimate, ties by job index -- the oracle's first option), or ``-1`` if not shown.

    :param sim: the simulation at a decision point
    :param rows: the env's job of every observation row (``-1`` padding)
    """
    jobs, easy = sim.candidates()
    jobs = jobs[easy]
    if len(jobs) == 0:
        return -1
    est = sim.estimates[jobs]
    j = int(jobs[np.lexsort((jobs, est))[0]])
    hit = np.flatnonzero(rows == j)
    return int(hit[0]) if len(hit) else -1


def collect(
    env: BackfillEnv,
    episodes: int,
    rng: np.random.Generator,
    *,
    teacher: dict[str, Any] | None = None,
    student: Any = None,
    beta: float = 1.0,
    first_episode: int = 0,
    starts: Sequence[int] | None = None,
    kind: str = "lookahead-oracle",
) -> tuple[Dataset, CollectStats]:
    """Play ``episodes`` env episodes and label every decision point with the teacher.

    :param env: the env (its ``split`` should be ``train``; its windows are drawn by
        ``reset(seed=...)`` with seeds from ``rng``)
    :param episodes: episodes to play
    :param rng: the generator of every random choice (reset seeds, the beta mixture)
    :param teacher: keyword arguments of the teacher:
        :class:`~hpcgym.sim.lookahead.LookaheadOracle`'s (``k``, ``horizon``, ``rollout``)
        for ``kind="lookahead-oracle"``,
        :class:`~hpcgym.sim.lookahead.Lookahead`'s (``k``, ``samples``, ``match``...) for
        ``kind="lookahead"``
    :param student: an object with SB3's ``predict`` (needed when ``beta < 1``)
    :param beta: probability that the teacher's choice is executed at a decision
        (1: behaviour cloning; < 1: DAgger's mixture)
    :param first_episode: episode number of the first episode (in :attr:`Dataset.episode`)
    :param starts: play these windows (``reset(options={"start": s})``, one episode each,
        cycling) instead of windows drawn by the env
    :param kind: the teacher, one of :data:`TEACHERS`
    :return: the samples and the statistics of the collection
    """
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta}")
    if beta < 1.0 and student is None:
        raise ValueError("beta < 1 needs a student policy")
    kwargs = dict(teacher or {})
    _teacher(kind, env, kwargs)  # a bad name or env fails before any episode
    kq = env.max_queue
    stats = CollectStats()
    rows_l: list[np.ndarray] = []
    counts, labels, sjbf, ep_ids, rets = [], [], [], [], []
    t_all = time.perf_counter()
    for e in range(int(episodes)):
        oracle = _teacher(kind, env, kwargs, rng)
        seed = int(rng.integers(2**31))
        opts = None if not starts else {"start": int(starts[e % len(starts)])}
        obs, info = env.reset(seed=seed, options=opts)
        first = len(labels)
        ret, done = 0.0, False
        while not done:
            action = kq
            if info["decision"]:
                sim = env.simulation
                shown = env.candidate_jobs()
                t0 = time.perf_counter()
                job = oracle(sim)
                stats.oracle_seconds += time.perf_counter() - t0
                stats.decisions += 1
                if job is None:
                    label = kq
                else:
                    hit = np.flatnonzero(shown == job)
                    label = int(hit[0]) if len(hit) else -1
                n = int(np.count_nonzero(shown >= 0))
                if label < 0:
                    stats.outside += 1
                else:
                    rows_l.append(obs[:n].copy())
                    counts.append(n)
                    labels.append(label)
                    sjbf.append(sjbf_row(sim, shown))
                    ep_ids.append(first_episode + e)
                if beta >= 1.0 or rng.random() < beta:
                    action = kq if label < 0 else label
                    stats.teacher_actions += 1
                else:
                    t0 = time.perf_counter()
                    a, _ = student.predict(
                        obs, action_masks=info["action_mask"], deterministic=True
                    )
                    stats.student_seconds += time.perf_counter() - t0
                    action = int(np.asarray(a).reshape(()))
                    stats.disagreements += int(action != label)
                if action != label and kind == "lookahead-oracle":
                    # the oracle's reuse shortcut assumes its own choice was taken
                    stats.rollouts += oracle.counters["lookahead_rollouts"]
                    oracle = _teacher(kind, env, kwargs)
            obs, r, done, _, info = env.step(action)
            ret += float(r)
        stats.rollouts += oracle.counters["lookahead_rollouts"]
        rets.extend([ret] * (len(labels) - first))
        stats.episodes += 1
        stats.episode_avg_bsld.append(float(info["agent"]["avg_bsld"]))
        ref = info.get("reference")
        stats.episode_reference_avg_bsld.append(float(ref["avg_bsld"]) if ref else float("nan"))
    stats.samples = len(labels)
    stats.seconds = time.perf_counter() - t_all
    nf = int(env.observation_space.shape[1])
    if not labels:
        return Dataset.empty(kq, nf), stats
    i64 = np.int64
    data = Dataset(
        np.concatenate(rows_l).astype(np.float32, copy=False),
        np.asarray(counts, dtype=i64),
        np.asarray(labels, dtype=i64),
        np.asarray(sjbf, dtype=i64),
        np.asarray(ep_ids, dtype=i64),
        np.asarray(rets, dtype=np.float64),
        kq,
    )
    return data, stats
