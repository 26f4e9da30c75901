"""Constants of the RLBackfilling paper (paper 004): Table 4 and Table 5 as published, its
traces, columns and evaluation protocol."""

from __future__ import annotations

from hpcgym.evaluation.windows import PAPER_LENGTH, PAPER_WINDOWS

__all__ = [
    "EXTRA_SCHEDULERS",
    "LABEL_TO_T4",
    "PAPER_LENGTH",
    "PAPER_TABLE4",
    "PAPER_TABLE5",
    "PAPER_WINDOWS",
    "TABLE4_COLUMNS",
    "TABLE4_TRACES",
]

#: RLBackfilling (paper 004) Table 4 traces and columns (RLBF = the shipped agent).
TABLE4_TRACES: tuple[str, ...] = ("SDSC-SP2", "HPC2N", "Lublin-1", "Lublin-2")
TABLE4_COLUMNS: tuple[str, ...] = (
    "FCFS+EASY",
    "FCFS+EASY-AR",
    "FCFS+RLBF",
    "SJF+EASY",
    "SJF+EASY-AR",
    "SJF+RLBF",
    "WFP3+EASY",
    "F1+EASY",
)
#: Our extra baselines appended to Table 4 (not in the paper).
EXTRA_SCHEDULERS: tuple[str, ...] = ("SAF", "EASY++", "ELOSS", "EASY-HMM")

#: Paper 004, Table 4: mean AVEbsld of 10 random 1024-job sequences ("-": not reported;
#: the synthetic Lublin traces have no user requests, so their EASY-AR equals EASY).
PAPER_TABLE4: dict[str, dict[str, float | None]] = {
    "SDSC-SP2": dict(
        zip(
            TABLE4_COLUMNS,
            (292.82, 169.24, 142.93, 187.61, 103.43, 120.72, 228.3, 162.33),
            strict=True,
        )
    ),
    "HPC2N": dict(
        zip(TABLE4_COLUMNS, (28.16, 18.87, 13.16, 11.67, 3.73, 9.75, 15.16, 10.46), strict=True)
    ),
    "Lublin-1": dict(
        zip(TABLE4_COLUMNS, (192.89, None, 83.43, 55.62, None, 30.57, 138.89, 50.9), strict=True)
    ),
    "Lublin-2": dict(
        zip(
            TABLE4_COLUMNS, (163.06, None, 120.46, 85.63, None, 105.59, 248.02, 129.83), strict=True
        )
    ),
}

_T5_COLS = ("EASY", "EASY-AR", "RL-SDSC-SP2", "RL-HPC2N", "RL-Lublin-1", "RL-Lublin-2")
#: Paper 004, Table 5: agents trained on trace X (``RL-X``) applied to trace Y (rows), per
#: base policy. The paper prints the Lublin rows' EASY value under EASY-AR.
PAPER_TABLE5: dict[str, dict[str, dict[str, float | None]]] = {
    "FCFS": {
        "SDSC-SP2": dict(
            zip(_T5_COLS, (292.82, 169.24, 142.93, 187.18, 216.94, 210.09), strict=True)
        ),
        "HPC2N": dict(zip(_T5_COLS, (28.16, 18.87, 13.03, 13.16, 13.99, 15.32), strict=True)),
        "Lublin-1": dict(zip(_T5_COLS, (None, 192.89, 78.62, 103.18, 83.43, 233.53), strict=True)),
        "Lublin-2": dict(
            zip(_T5_COLS, (None, 163.06, 139.71, 179.15, 143.59, 120.46), strict=True)
        ),
    },
    "SJF": {
        "SDSC-SP2": dict(
            zip(_T5_COLS, (187.61, 103.43, 120.72, 125.52, 160.53, 133.17), strict=True)
        ),
        "HPC2N": dict(zip(_T5_COLS, (11.67, 3.73, 9.97, 9.75, 11.34, 11.22), strict=True)),
        "Lublin-1": dict(zip(_T5_COLS, (None, 55.62, 33.28, 28.29, 30.57, 32.19), strict=True)),
        "Lublin-2": dict(zip(_T5_COLS, (None, 85.63, 132.43, 110.28, 119.24, 105.59), strict=True)),
    },
}
#: A compare label -> its Table 4 column (for the ``paper_table4`` column of summaries).
LABEL_TO_T4: dict[str, str] = {
    "EASY": "FCFS+EASY",
    "FCFS+EASY": "FCFS+EASY",
    "EASY-AR": "FCFS+EASY-AR",
    "FCFS+EASY-AR": "FCFS+EASY-AR",
    "SJF+EASY": "SJF+EASY",
    "SJF+EASY-AR": "SJF+EASY-AR",
    "WFP3+EASY": "WFP3+EASY",
    "F1+EASY": "F1+EASY",
}
