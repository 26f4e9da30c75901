"""A TensorBoard screenshot of two agents and the heuristics on one chart, taken in a real
browser (the docs' figure docs/figures/tensorboard_overlay.png).

Trains two small agents (``train/ppo.py`` on the embedded synthetic trace, two seeds, into
one log folder; the first evaluation writes the heuristics' runs once, the second training
reuses them), starts TensorBoard on a free localhost port, loads the Scalars tab filtered
to ``eval/avg_bsld`` (docs/figures/tensorboard_overlay.png) and its HParams tab
(docs/figures/tensorboard_hparams.png) in headless Chromium, and stops TensorBoard by its
PID::

    python bench/tensorboard_screenshot.py                      # the docs' figure
    python bench/tensorboard_screenshot.py --logdir runs/ --no-train --tag eval/ratio_vs_EASY-SJBF

Needs ``chromium`` (``apt-get install chromium``) and the ``train`` extra (tensorboard).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m bench.tensorboard_screenshot`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "bench.tensorboard_screenshot", *sys.argv[1:]])

#: The settings of the two agents: small runs on the embedded synthetic trace.
TRAIN_ARGS: tuple[str, ...] = (
    "--seq-len",
    "64",
    "--n-envs",
    "2",
    "--n-steps",
    "128",
    "--eval-windows",
    "4",
    "--eval-length",
    "128",
    "--eval-every",
    "1",
    "--stop-init",
    "-3",
    "--baselines",
    "EASY,EASY-AR,EASY-SJBF,SAF",
    "--no-progress",
)

BROWSERS: tuple[str, ...] = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_browser(name: str | None = None) -> str | None:
    """The headless browser: ``name`` or the first of :data:`BROWSERS` on the PATH.

    :param name: a browser command or path
    """
    for cand in [name] if name else BROWSERS:
        path = shutil.which(cand) if cand else None
        if path:
            return path
    return None


def train_agents(logdir: Path, steps: int, seeds: tuple[int, ...] = (0, 1)) -> list[Path]:
    """Two agents (one per seed) in ``logdir/agent-seed<s>``.

    :param logdir: the log folder
    :param steps: training steps of each
    :param seeds: one agent per seed
    """
    from train.ppo import main

    runs = []
    for s in seeds:
        name = f"agent-seed{s}"
        main(
            [
                *TRAIN_ARGS,
                *("--total-steps", str(steps), "--seed", str(s)),
                *("--logdir", str(logdir), "--run-name", name),
            ]
        )
        runs.append(logdir / name)
    return runs


def free_port() -> int:
    """A free TCP port on localhost."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310 - localhost
        return resp.read()


def wait_for_tag(base: str, tag: str, runs: int, timeout: float = 90.0) -> None:
    """Wait until TensorBoard serves ``tag`` for at least ``runs`` runs.

    :raises TimeoutError: not within ``timeout`` seconds
    """
    import json

    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        try:
            data = json.loads(_get(f"{base}/data/plugin/scalars/tags"))
            seen = sum(1 for tags in data.values() if tag in tags)
            if seen >= runs:
                return
        except OSError:
            pass
        time.sleep(1.0)
    raise TimeoutError(f"TensorBoard at {base} served {tag!r} for {seen} of {runs} runs")


@contextlib.contextmanager
def serve(logdir: Path) -> Iterator[str]:
    """TensorBoard on ``logdir`` on a free localhost port, stopped by its PID on exit.

    :param logdir: the log folder
    :return: (yields) its base URL
    """
    port = free_port()
    cmd = [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--reload_interval", "1"]
    with tempfile.TemporaryFile("w+") as log:
        tb = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield f"http://127.0.0.1:{port}"
        except BaseException:
            log.seek(0)
            sys.stderr.write(log.read()[-3000:])
            raise
        finally:
            tb.terminate()  # by its PID: the process started here
            try:
                tb.wait(timeout=10)
            except subprocess.TimeoutExpired:
                tb.kill()
                tb.wait()


def shoot(
    exe: str,
    url: str,
    out: Path,
    size: tuple[int, int] = (820, 900),
    scale: float = 1.5,
    budget_ms: int = 20000,
) -> Path:
    """A headless-browser screenshot of ``url`` into ``out``.

    :param exe: the browser
    :param url: the page
    :param out: the PNG
    :param size: window width and height (CSS pixels)
    :param scale: device pixels per CSS pixel (a sharper, larger chart)
    :param budget_ms: the browser's virtual time budget (page scripts and charts)
    :raises RuntimeError: it wrote no PNG
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={size[0]},{size[1]}",
                f"--force-device-scale-factor={scale}",
                f"--virtual-time-budget={budget_ms}",
                f"--screenshot={out}",
                url,
            ],
            check=False,
            capture_output=True,
            timeout=180,
        )
    if not out.is_file() or out.stat().st_size == 0:
        raise RuntimeError(f"{exe} wrote no screenshot to {out}")
    return out


def scalars_url(base: str, tag: str) -> str:
    """The Scalars tab showing the tags matching ``^tag$``, without smoothing."""
    flt = urllib.parse.quote(f"^{tag}$", safe="")
    return f"{base}/?darkMode=false#scalars&tagFilter={flt}&_smoothingWeight=0"


def screenshot(
    logdir: Path,
    out: Path,
    tag: str = "eval/avg_bsld",
    runs: int = 2,
    browser: str | None = None,
    hparams_out: Path | None = None,
) -> Path:
    """Start TensorBoard on ``logdir`` (free localhost port), screenshot its Scalars tab
    filtered to ``tag`` with headless Chromium into ``out`` (and its HParams tab into
    ``hparams_out``), stop TensorBoard by its PID.

    :param logdir: the log folder
    :param out: the PNG of the chart
    :param tag: the chart's tag (matched exactly)
    :param runs: runs that must have the tag before the screenshot
    :param browser: the browser command (default: :func:`find_browser`)
    :param hparams_out: the PNG of the HParams tab, or ``None``
    :raises RuntimeError: no browser, or it wrote no PNG
    """
    exe = find_browser(browser)
    if exe is None:
        raise RuntimeError(
            f"no headless browser found ({', '.join(BROWSERS)}): apt-get install chromium"
        )
    with serve(logdir) as base:
        wait_for_tag(base, tag, runs)
        shoot(exe, scalars_url(base, tag), out)
        if hparams_out is not None:
            shoot(exe, f"{base}/?darkMode=false#hparams", hparams_out, size=(1300, 520))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--logdir", type=Path, help="log folder (default: a temporary one)")
    p.add_argument(
        "--out", type=Path, default=REPO / "docs" / "figures" / "tensorboard_overlay.png"
    )
    p.add_argument(
        "--hparams-out",
        type=Path,
        default=REPO / "docs" / "figures" / "tensorboard_hparams.png",
        help="the HParams tab's screenshot ('none': not taken)",
    )
    p.add_argument("--steps", type=int, default=1536, help="training steps of each agent")
    p.add_argument("--no-train", action="store_true", help="screenshot --logdir as it is")
    p.add_argument("--tag", default="eval/avg_bsld", help="the chart's tag")
    p.add_argument("--browser", help="browser command (default: chromium on the PATH)")
    args = p.parse_args(argv)
    if args.no_train and args.logdir is None:
        p.error("--no-train needs --logdir")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    with tempfile.TemporaryDirectory() as tmp:
        logdir = args.logdir or Path(tmp) / "runs"
        if not args.no_train:
            train_agents(logdir, args.steps)
        hp = None if str(args.hparams_out).lower() == "none" else args.hparams_out
        png = screenshot(logdir, args.out, args.tag, browser=args.browser, hparams_out=hp)
    for f in (png, hp):
        if f is not None:
            print(f"screenshot: {f} ({f.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
