"""The numerical environment a result was computed in: numpy, its BLAS, and the BLAS
kernel chosen for this CPU.

The engine is deterministic, but some estimators take dot products and solves through
numpy's BLAS (E-Loss's online regression, log-ridge's least squares). OpenBLAS built with
``DYNAMIC_ARCH`` (numpy's wheels) picks its kernels for the CPU it runs on, and kernels
for different CPUs (``Haswell``, ``SkylakeX``, ``Zen``...) sum in different orders. So a
result can differ in its ninth or tenth significant digit between machines, even though
the seed, the windows and the code are the same. Pinning the kernel with the
``OPENBLAS_CORETYPE`` environment variable to the one that recorded the result makes the
replay exact. A recorded held-out test keeps :func:`numeric_environment` beside its
values for this reason (docs/evaluation.md, *Checking a recorded test*).
"""

from __future__ import annotations

import ctypes
import glob
import os
import platform
from typing import Any

__all__ = ["blas_core", "numeric_environment", "pinning_hint"]

# the symbols OpenBLAS builds export for the kernel's name, numpy's wheels first
_CORENAME_SYMBOLS = (
    "scipy_openblas_get_corename64_",
    "scipy_openblas_get_corename",
    "openblas_get_corename64_",
    "openblas_get_corename",
)


def _blas_build() -> dict[str, Any]:
    import numpy as np

    try:
        config = np.show_config(mode="dicts")  # numpy >= 1.26
    except TypeError:
        return {}
    return dict(((config or {}).get("Build Dependencies") or {}).get("blas") or {})


def blas_core() -> str | None:
    """The name of the kernel OpenBLAS chose for this CPU (``"Haswell"``, ``"SkylakeX"``,
    ``"Zen"``...; ``OPENBLAS_CORETYPE`` overrides the choice), or None when numpy's BLAS
    is not an OpenBLAS whose library can be found next to numpy."""
    import numpy as np

    here = os.path.dirname(np.__file__)
    libs = sorted(
        glob.glob(os.path.join(here, "..", "numpy.libs", "*openblas*"))
        + glob.glob(os.path.join(here, ".dylibs", "*openblas*"))
    )
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _CORENAME_SYMBOLS:
            fn = getattr(lib, name, None)
            if fn is None:
                continue
            fn.restype = ctypes.c_char_p
            value = fn()
            if value:
                return value.decode("ascii", "replace").strip() or None
    return None


def numeric_environment() -> dict[str, Any]:
    """``{"numpy", "blas", "blas_core", "machine"}`` of this process: numpy's version,
    its BLAS library and version as numpy was built with it, the BLAS kernel in use
    (:func:`blas_core`; None when unknown) and the CPU architecture."""
    import numpy as np

    build = _blas_build()
    name = " ".join(str(build[k]) for k in ("name", "version") if build.get(k)) or None
    return {
        "numpy": np.__version__,
        "blas": name,
        "blas_core": blas_core(),
        "machine": platform.machine() or None,
    }


def pinning_hint(recorded: dict[str, Any] | None) -> str:
    """What to try when a replay departs from a recorded result in the last digits: the
    kernels of the recording and of this machine, and the environment variable that pins
    the kernel.

    :param recorded: the result's stored :func:`numeric_environment` (None for results
        recorded before it was kept)
    """
    now = numeric_environment()
    core = now["blas_core"] or "unknown"
    was = (recorded or {}).get("blas_core")
    if was and was != now["blas_core"]:
        return (
            f"recorded with the BLAS kernel {was}, replayed with {core}: replay with "
            f"OPENBLAS_CORETYPE={was} to use the recording's kernel"
        )
    if was:
        return (
            f"recorded and replayed with the BLAS kernel {was}: a departure is not the "
            "kernel's (numpy and BLAS versions: "
            f"{(recorded or {}).get('numpy')} / {(recorded or {}).get('blas')} then, "
            f"{now['numpy']} / {now['blas']} now)"
        )
    return (
        f"the recording's BLAS kernel is not stored (this machine's: {core}); values that "
        "differ in the ninth or tenth digit usually come from another CPU's kernel: try "
        "OPENBLAS_CORETYPE=Haswell, SkylakeX or Zen"
    )
