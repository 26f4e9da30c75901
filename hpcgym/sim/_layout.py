"""The layout of the engine state (see :mod:`hpcgym.sim._core`): the rows of the job
arrays, the scalar slots, phases, events and the kernel ids of the options.

:mod:`hpcgym.sim._core` re-exports every name, so callers write ``K.C_HEAD``.
"""

from __future__ import annotations

import numpy as np

# --------------------------------------------------------------------------- layout
# JF rows
F_SUBMIT = 0
F_RUNTIME = 1
F_REQUEST = 2
F_EST = 3  # reservation estimate: backfill eligibility, SJBF order, shadow time (and the
# queue keys, unless a separate ranking estimate is set: C_RANKSEP, F_RANK)
F_REST = 4  # estimate of a running job's duration (shadow time); corrected over time
F_START = 5  # start time (nan until started)
F_KEY = 6  # scratch: policy key
F_HEAPT = 7  # completion heap: times
F_XHEAPT = 8  # expiry (estimated end reached) heap: times
F_BFSHADOW = 9  # shadow time when the job was backfilled (nan otherwise)
F_INITEST = 10  # running estimate at start time (before corrections)
F_HEADSINCE = 11  # time the job last became the reserved head (nan: never)
F_RANK = 12  # ranking estimate: the run time the queue keys use when C_RANKSEP is 1
NF = 13

# JI rows
I_PROCS = 0
I_STATUS = 1  # 0 future, 1 waiting, 2 running, 3 done
I_BACKFILLED = 2  # 1 if started by backfilling
I_QUEUE = 3  # waiting jobs, in index (= submit) order, length C_QLEN
I_RUN = 4  # running jobs sorted by (start + rest, index), length C_RLEN
I_HEAPJ = 5  # completion heap: jobs
I_XHEAPJ = 6  # expiry heap: jobs
I_FIN = 7  # log of completed jobs, in completion order, length C_NFIN
I_ORDER = 8  # scratch: waiting jobs in queue (policy) order, length C_OLEN
I_BFHEAD = 9  # head job when the job was backfilled (-1 otherwise)
I_NCORR = 10  # number of corrections applied to the job
I_STARTLOG = 11  # log of started jobs, in start order, length C_NSTART
I_BFORDER = 12  # scratch: backfill order
I_NREJECT = 13  # inspection: times the inspector rejected the job's start
NI = 14

ST_FUTURE = 0
ST_WAITING = 1
ST_RUNNING = 2
ST_DONE = 3

# S
S_T = 0
S_SHADOW = 1
S_THETA = 2  # starvation threshold (<= 0: off)
S_PENDING_T = 3  # time of the pending event batch
S_UNTIL = 4  # advance() pauses before handling events later than this (inf: never)
S_WILLRUN_WIN = 5  # > 0: the head's reservation as Slurm's will-run test plans it (_willrun)
S_WILLRUN_ORIGIN = 6  # the clock time of the simulation's time 0 (aligns those windows)
NS = 7

# C
C_PHASE = 0
C_NEXT = 1  # next job to arrive
C_QLEN = 2
C_RLEN = 3
C_HLEN = 4
C_XLEN = 5
C_FREE = 6
C_EXTRA = 7
C_NFIN = 8
C_M = 9
C_POLICY = 10
C_BACKFILL = 11
C_CANDMODE = 12
C_CORRECTION = 13
C_ONLINE = 14
C_HEAD = 15  # reserved head job (-1 if none)
C_DECISIONS = 16
C_VIOLATIONS = 17
C_NBACKFILLED = 18
C_ARR_LO = 19
C_ARR_HI = 20
C_OLEN = 21
C_NSTART = 22
C_RUN_REQUEST = 23  # 1: running jobs' ends use the request (Tang's selective variant)
C_CORRECTIONS = 24  # total corrections applied
C_N = 25
C_BFMODE = 26  # order used by the external backfill order: 0 policy, 1 SJBF
C_QCHOICE = 27  # external queue policy: the caller's choice of head (-1: none yet)
C_QCOMMIT = 28  # external queue policy: 1 = a chosen head keeps its place until it starts
C_QRENEW = 29  # external queue policy: a job started ahead of the head in this pass
C_QDECISIONS = 30  # queue decisions asked of the caller
C_QREST = 31  # external queue policy: the policy ordering the jobs behind the head
C_RANKSEP = 32  # 1: queue keys rank by F_RANK; 0 (default): by F_EST, the reservation estimate
C_INSPECT = 33  # 1: every start of the queue policy's pick is inspected (EV_INSPECT); 2: off
# after the pending verdict (Simulation.disable_inspection at a decision)
C_IJOB = 34  # inspection: the job whose start awaits the verdict (-1: none)
C_IANSWER = 35  # inspection: the verdict on C_IJOB (-1: none yet, 0 accept, 1 reject)
C_IMAXREJ = 36  # inspection: rejections allowed per job
C_IDECISIONS = 37  # inspection decisions asked of the caller
C_IREJECTS = 38  # inspection: rejections
NC = 39

# phases
P_EVENTS = 0
P_ARRIVE = 1
P_DECIDE = 2
P_DONE = 3
P_QUEUE = 4
P_INSPECT = 5

# events returned by advance()
EV_DONE = 0
EV_ESTIMATE = 1
EV_DECISION = 2
EV_PAUSE = 3
EV_QUEUE = 4
EV_INSPECT = 5

# backfill modes
BF_NONE = 0
BF_EASY = 1
BF_SJBF = 2
BF_CONSERVATIVE = 3
BF_EXTERNAL = 4

# candidate modes (external backfill)
CAND_EASY = 0  # jobs EASY would allow now (guarded)
CAND_FIT = 1  # all jobs that fit now

# corrections
CORR_REQUEST = 0
CORR_INCREMENTAL = 1
CORR_DOUBLING = 2
CORR_INCREMENTAL_OFFSET = 3  # predictsim's variant: initial estimate + k-th step

# policies
POL_FCFS = 0
POL_SJF = 1
POL_SQF = 2
POL_SAF = 3
POL_LJF = 4
POL_LQF = 5
POL_LAF = 6
POL_WFP3 = 7
POL_UNICEF = 8
POL_F1 = 9
POL_F2 = 10
POL_F3 = 11
POL_F4 = 12
POL_EXTERNAL = 13  # the caller chooses the head at every queue decision (EV_QUEUE)

INF = np.inf

# incremental correction steps (Tsafrir et al. via Gaussier et al. §5.2), seconds
INCREMENTS = np.array(
    [60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 18000.0, 36000.0, 72000.0, 180000.0, 360000.0]
)
