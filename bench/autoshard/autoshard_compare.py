"""The auto-sharding table: for each program of models.py, `xshard autoshard` on the program stripped
of shardings (only the mesh given), once choosing by the model alone and once with --measure
(every candidate run, the fastest kept), against the hand-written shardings, all timed with
`xshard bench run` in one interleaved run (auto, auto --measure, hand 1, hand 2, ..., repeated),
with predicted next to measured.

  bench/jax_compare/.venv/bin/python bench/autoshard/autoshard_compare.py [--xshard build/xshard]
      [--only NAME,...] [--rounds 2] [--hardware FILE] [--out bench/autoshard/out]

Prints a markdown table; writes the HLO files and the raw figures under --out.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models  # noqa: E402


def lower(prog, specs):
    args = prog.make_args()
    if specs is None:
        return jax.jit(prog.fn).lower(*args).as_text(dialect="hlo")
    devs = np.array(jax.devices()[:prog.devices]).reshape(prog.mesh_shape)
    mesh = Mesh(devs, prog.axis_names)
    sh = tuple(NamedSharding(mesh, s) for s in specs)
    return jax.jit(prog.fn, in_shardings=sh).lower(*args).as_text(dialect="hlo")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout


def bench(xshard, path, hardware):
    cmd = [xshard, "bench", "run", str(path), "--random-args", "1", "--predict"]
    if hardware:
        cmd += ["--hardware", hardware]
    out = run(cmd)
    median = float(re.search(r"median_ms=([0-9.]+)", out).group(1))
    m = re.search(r"predicted ([0-9.]+) ms", out)
    return median, (float(m.group(1)) if m else float("nan"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xshard", default="build/xshard")
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--hardware", default="")
    ap.add_argument("--out", default="bench/autoshard/out")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    progs = models.all_programs()
    if a.only:
        keep = set(a.only.split(","))
        progs = [p for p in progs if p.name in keep]
    rows = []
    for prog in progs:
        d = out / prog.name
        d.mkdir(exist_ok=True)
        (d / "bare.hlo").write_text(lower(prog, None))
        hands = {}
        for i, (label, specs) in enumerate(prog.hand.items()):
            f = d / f"hand{i}.hlo"
            f.write_text(lower(prog, specs))
            hands[label] = f
        cmd = [a.xshard, "autoshard", str(d / "bare.hlo"), "--mesh", prog.mesh_flag()]
        if a.hardware:
            cmd += ["--hardware", a.hardware]
        t0 = time.perf_counter()
        report = run(cmd + ["--emit", str(d / "auto.hlo")])
        solve_s = time.perf_counter() - t0
        (d / "autoshard.txt").write_text(report)
        (d / "autoshard_measure.txt").write_text(run(cmd + ["--emit", str(d / "auto_measured.hlo"), "--measure"]))
        plans = [("autoshard", d / "auto.hlo"), ("autoshard --measure", d / "auto_measured.hlo")] + list(hands.items())
        meas = {k: [] for k, _ in plans}
        pred = {}
        for _ in range(a.rounds):  # interleaved: auto, hand 1, hand 2, ..., then again
            for label, f in plans:
                m, p = bench(a.xshard, f, a.hardware)
                meas[label].append(m)
                pred[label] = p
        med = {k: float(np.median(v)) for k, v in meas.items()}
        best_hand = min((k for k in med if not k.startswith("autoshard")), key=lambda k: med[k])
        row = dict(name=prog.name, what=prog.what, mesh=prog.mesh_flag(), measured=med, predicted=pred,
                   best_hand=best_hand, ratio=med["autoshard"] / med[best_hand],
                   ratio_measured=med["autoshard --measure"] / med[best_hand], autoshard_s=solve_s)
        rows.append(row)
        print(json.dumps(row), flush=True)
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    load = os.getloadavg()[0]
    print(f"\nload average at the end: {load:.2f}; medians of {a.rounds} interleaved rounds\n")
    print("| program | mesh | hand-written plans: measured ms | autoshard ms (/ best hand) | "
          "autoshard --measure ms (/ best hand) | predicted / measured (autoshard) | autoshard wall s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        hands = "; ".join(f"{k} {v:.1f}" for k, v in r["measured"].items() if not k.startswith("autoshard"))
        auto = r["measured"]["autoshard"]
        am = r["measured"]["autoshard --measure"]
        print(f"| {r['name']} | {r['mesh']} | {hands} | {auto:.1f} ({r['ratio']:.2f}) | {am:.1f} "
              f"({r['ratio_measured']:.2f}) | {r['predicted']['autoshard'] / auto:.2f} | {r['autoshard_s']:.2f} |")


if __name__ == "__main__":
    main()
