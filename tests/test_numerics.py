"""``hpcgym.evaluation.numerics``: the BLAS kernel a result was computed with, and what a
replay's departure in the last digits says about it."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from hpcgym.evaluation.numerics import blas_core, numeric_environment, pinning_hint


def test_numeric_environment() -> None:
    env = numeric_environment()
    assert set(env) == {"numpy", "blas", "blas_core", "machine"}
    assert env["numpy"] == np.__version__
    assert env["blas_core"] == blas_core()


def test_the_kernel_follows_openblas_coretype() -> None:
    if blas_core() is None or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("numpy's BLAS is not an x86-64 OpenBLAS next to numpy")
    code = "from hpcgym.evaluation.numerics import blas_core; print(blas_core())"
    env = {**os.environ, "OPENBLAS_CORETYPE": "Sandybridge"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "Sandybridge"  # a kernel every x86-64 CPU here runs


def test_pinning_hint() -> None:
    now = numeric_environment()
    other = "Prescott" if now["blas_core"] != "Prescott" else "Haswell"
    assert f"OPENBLAS_CORETYPE={other}" in pinning_hint({"blas_core": other})
    assert "not the kernel's" in pinning_hint(now) or now["blas_core"] is None
    assert "is not stored" in pinning_hint(None)
    assert "is not stored" in pinning_hint({"numpy": "2.0"})
