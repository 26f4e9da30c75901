"""Text rendering of a :class:`~hpcgym.envs.backfill_env.BackfillEnv` decision point
(``render_mode="ansi"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpcgym.envs import observation as FT

if TYPE_CHECKING:
    from hpcgym.envs.generic_env import TaskEnv

__all__ = ["render_ansi"]


def render_ansi(env: TaskEnv) -> str:
    """The env's current decision point as text: the window, the machine state, the head
    job's reservation and one line per observation row.

    :param env: an env with an episode (after ``reset``)
    """
    st = env.state
    sim = env.simulation
    m = sim.workload.machine_size
    c = sim.counters
    lines = [
        f"{env.trace_label}[{st.start}:{st.start + env.window_length}] "
        f"t={sim.now:.0f} free={sim.free}/{m} decisions={c['decisions']} "
        f"backfills={c['backfills']} violations={c['violations']}"
    ]
    if not st.at_decision:
        lines.append("  no decision (episode over after the next step)")
        return "\n".join(lines)
    head = sim.head
    lines.append(
        f"  head: job {head} ({int(sim.workload.procs[head])} procs) "
        f"shadow=+{sim.shadow - sim.now:.0f}s extra={sim.extra}; "
        f"{st.count} candidate(s), action {env.max_queue} = STOP"
    )
    for i, j in enumerate(st.rows[: min(st.count, env.max_queue)]):
        lines.append(
            f"  [{i:3d}] job {j:5d} procs={int(sim.workload.procs[j]):5d} "
            f"est={sim.estimates[j]:9.0f}s wait={sim.now - sim.workload.submit[j]:9.0f}s"
            f"{'' if st.obs[i, FT.COL_EASY] else '  (delays the head)'}"
        )
    return "\n".join(lines)
