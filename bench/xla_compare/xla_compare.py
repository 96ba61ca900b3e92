#!/usr/bin/env python3
"""xshard vs XLA on a suite of small JAX programs (programs.py): results and communication.

For each program, on 8 virtual CPU devices: lower it with JAX's defaults (Shardy) and with
jax_use_shardy_partitioner=False (GSPMD), `xshard run --devices N` each HLO and check the outputs
against JAX's (numpy allclose); count the collectives of XLA's compiled program
(jit(...).lower(...).compile().as_text()) and of xshard's partitioned program (`xshard partition
--report`, the printed program), with the bytes each device receives (collectives.py: the report's
ring model) and the FLOPs of their dots and convolutions per device, and print a table. Both
sides count every collective of the final program, the program's own (shard_map) ones included;
one in a loop body counts once. Exits 1 on any wrong result or xshard error; with --check-bytes
also when xshard moves more bytes per device than XLA.

JAX comes from PyPI into bench/jax_compare/.venv (shared with jax_compare), created by --setup or
on the first run.

  bench/xla_compare/xla_compare.py --setup
  bench/xla_compare/xla_compare.py [--xshard build/xshard] [--only NAME]... [--quick] [--check-bytes]
                                   [--json out.json] [--skip-without-venv]
"""
import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "jax_compare"))
sys.path.insert(0, str(HERE))
import jax_compare  # noqa: E402  (venv logic only; no JAX import at module level)
import collectives  # noqa: E402

DEVICES = 16  # the largest mesh of the suite (programs take the first N, or device_order)
# allclose tolerances: rtol, and atol as a fraction of max |JAX output| (summation order differs).
TOLERANCE = {"f32": (1e-3, 1e-4), "bf16": (1.6e-2, 1e-2), "f16": (1e-2, 1e-3)}
SKIP = 77  # ctest's skip code (--skip-without-venv)
# The lowerings each program gets: JAX's Shardy and GSPMD ones, or GSPMD alone for releases
# without jax_use_shardy_partitioner (before 0.4.31; XSHARD_JAX_VENV), whose xshard / XLA columns
# then count the GSPMD form.
MODES = ["shardy", "gspmd"]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--setup", action="store_true", help="create the venv with JAX and exit")
    p.add_argument("--xshard", default=None, help="xshard binary (default: build/xshard of this checkout)")
    p.add_argument("--only", action="append", default=[], help="only programs whose name contains this")
    p.add_argument("--list", action="store_true", help="list the programs and exit")
    p.add_argument("--quick", action="store_true", help="only the fast subset (the ctest)")
    p.add_argument("--check-bytes", action="store_true",
                   help="also fail when xshard moves more bytes per device than XLA")
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--out", default=str(HERE / "out"), help="work directory for HLO / .npy (default out/)")
    p.add_argument("--skip-without-venv", action="store_true",
                   help=f"exit {SKIP} (skipped) when the venv does not exist instead of creating it")
    return p.parse_args(argv)


def run(cmd, timeout=600):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if p.returncode != 0:
        lines = p.stderr.strip().splitlines()
        return None, (lines[-1] if lines else f"exit {p.returncode}")
    return p.stdout, None


def compare(want, save_dir, dtype, np, ml_dtypes):
    """(agree, worst |diff| / tolerance, message) of xshard's saved outputs (save_dir/out<i>.npy;
    or a list of arrays) against JAX's."""
    rtol, atol_frac = TOLERANCE[dtype]
    agree, worst, msgs = True, 0.0, []
    for i, ref in enumerate(want):
        if isinstance(save_dir, list):
            got = save_dir[i]
        else:
            f = save_dir / f"out{i}.npy"
            if not f.exists():
                return False, float("inf"), f"out{i}.npy missing"
            got = np.load(f)
        if got.dtype.kind == "V":
            # numpy has no bf16 / float8 dtypes: .npy stores them as raw bytes ("V2", "V1"); read
            # them as JAX's output type (ml_dtypes), or as bf16 for a 2-byte reference of another kind.
            if ref.dtype.itemsize == got.dtype.itemsize and ref.dtype.kind == "V":
                got = got.view(ref.dtype)
            elif got.dtype.itemsize == 2:
                got = got.view(ml_dtypes.bfloat16)
            elif ref.dtype.itemsize == got.dtype.itemsize:
                got = got.view(ref.dtype)
        if got.shape != ref.shape:
            agree = False
            msgs.append(f"out{i} shape {got.shape} != {ref.shape}")
            continue
        ref64, got64 = ref.astype(np.float64), got.astype(np.float64)
        if ref.dtype.kind in "iub":
            atol, r = 0.0, 0.0
        else:
            atol = atol_frac * max(float(np.max(np.abs(ref64[np.isfinite(ref64)]), initial=0.0)), 1e-30)
            r = rtol
        # NaN where JAX has NaN agrees (a NaN-propagating max, 0/0); anywhere else it does not.
        ok = np.allclose(got64, ref64, rtol=r, atol=atol, equal_nan=True)
        both_nan = np.isnan(got64) & np.isnan(ref64)
        with np.errstate(invalid="ignore"):
            diff = np.where(both_nan | (got64 == ref64), 0.0, np.abs(got64 - ref64))
        err = np.nan_to_num(diff / (atol + r * np.abs(np.nan_to_num(ref64)) + 1e-300), nan=np.inf)
        worst = max(worst, float(np.max(err, initial=0.0)))
        if not ok:
            agree = False
            nan = int(np.count_nonzero(np.isnan(got64) != np.isnan(ref64)))
            msgs.append(f"out{i} max |diff| {float(np.max(diff[~np.isnan(diff)], initial=0.0)):.4g}"
                        + (f", {nan} NaN where the other has none" if nan else ""))
    return agree, worst, "; ".join(msgs)


def lower_and_call(p, host, jax, np):
    """Lowers p under the current jax config; returns (lowered, compiled, XLA's compiled text,
    JAX's outputs, the indices of the arguments the HLO keeps)."""
    fn, in_sh = p.jitted()
    placed = [jax.device_put(a, s) for a, s in zip(host, in_sh)]
    lowered = fn.lower(*placed)
    # jit drops arguments the result does not depend on: xshard gets the kept ones.
    kept = sorted(lowered._lowering.compile_args.get("kept_var_idx") or range(len(host)))
    compiled = lowered.compile()
    got = [np.asarray(o) for o in jax.tree.leaves(jax.block_until_ready(compiled(*placed)))]
    return lowered, compiled, compiled.as_text(), got, kept


def jax_unsharded(p, host, jax, np):
    """[JAX's outputs of p's function jitted without shardings on the host inputs], or [] when it
    does not run that way (a shard_map or a constraint needs the mesh)."""
    try:
        out = jax.jit(p.make_fn(p.mesh()))(*host)
        return [[np.asarray(o) for o in jax.tree.leaves(jax.block_until_ready(out))]]
    except Exception:  # noqa: BLE001  (any failure: no second opinion)
        return []


def xshard_counts(xshard, hlo, devices, flags):
    """Collectives of `xshard partition --report` (the printed program) and the report's header."""
    out, err = run([xshard, "partition", str(hlo), "--devices", str(devices), "--report", *flags])
    if err:
        return None, err
    program, _, report = out.partition("\nSPMD partitioning:")
    c = collectives.count(program, devices)
    c["flops"] = collectives.dot_flops(program)
    m = re.match(r" \d+ partitions, (\d+) collectives?", report)
    c["report_count"] = int(m.group(1)) if m else None
    return c, None


def main(argv):
    args = parse_args(argv)
    if args.setup:
        jax_compare.setup_venv()
        return 0
    if args.skip_without_venv and not jax_compare.venv_has_jax():
        print(f"skipped: no venv with JAX at {jax_compare.VENV} (create it with {sys.argv[0]} --setup)")
        return SKIP
    jax_compare.reexec_in_venv(argv, script=__file__)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no GSPMD deprecation warnings
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_force_host_platform_device_count={DEVICES}").strip()
    import jax  # noqa: E402  (after XLA_FLAGS)
    import ml_dtypes
    import numpy as np
    import programs

    has_shardy = "jax_use_shardy_partitioner" in jax.config.values
    if not has_shardy:
        MODES[:] = ["gspmd"]

    every = programs.all_programs()
    if args.list:
        for p in every:
            print(f"{p.name:20s} {'quick ' if p.quick else '      '}{p.what}")
        return 0
    todo = [p for p in every if (not args.only or any(o in p.name for o in args.only)) and
            (not args.quick or p.quick)]
    if not todo:
        print(f"no program matches {args.only}", file=sys.stderr)
        return 1
    xshard, commit = jax_compare.find_xshard(args.xshard)
    if xshard is None:
        return 1
    print(f"JAX {jax.__version__}, {jax.device_count()} CPU devices; xshard {xshard} (checkout {commit})",
          flush=True)
    start = time.time()
    out_root = Path(args.out)
    results = []
    for p in todo:
        r = {"name": p.name, "what": p.what, "devices": p.devices}
        results.append(r)
        wdir = out_root / p.name
        shutil.rmtree(wdir, ignore_errors=True)
        wdir.mkdir(parents=True)
        host = [np.asarray(a) for a in p.make_args()]
        arg_files = []
        for i, a in enumerate(host):
            arg_files.append(wdir / f"arg{i}.npy")
            np.save(arg_files[-1], a)
        flags = []  # an output without out_shardings is open by default, as under jax.jit
        want = None
        unsharded = None  # JAX's outputs for unsharded inputs, asked for when xshard disagrees
        for mode in MODES:
            if has_shardy:
                jax.config.update("jax_use_shardy_partitioner", mode == "shardy")
            try:
                ctx = contextlib.nullcontext()
                if p.context_mesh:  # jax.set_mesh from JAX 0.7; the mesh itself before
                    ctx = jax.set_mesh(p.mesh()) if hasattr(jax, "set_mesh") else p.mesh()
                with ctx:
                    lowered, compiled, xla_text, got, kept = lower_and_call(p, host, jax, np)
                hlo = wdir / f"{mode}.hlo"
                hlo.write_text(jax_compare.hlo_text(lowered))
                (wdir / f"{mode}.xla.txt").write_text(xla_text)
                del compiled
            except Exception as e:  # a suite bug, not xshard's
                r[f"{mode}_error"] = f"JAX: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                continue
            r[f"xla_{mode}"] = collectives.count(xla_text, p.devices)
            r[f"xla_{mode}"]["flops"] = collectives.dot_flops(xla_text)
            if want is None:
                want = got
            save = wdir / f"{mode}_out"
            shutil.rmtree(save, ignore_errors=True)
            _, err = run([xshard, "run", str(hlo), "--devices", str(p.devices), "--save", str(save), *flags,
                          "--args", *(str(arg_files[i]) for i in kept)])
            if err:
                r[f"{mode}_error"] = err
            else:
                agree, worst, msg = compare(want, save, p.dtype, np, ml_dtypes)
                if not agree and unsharded is None:
                    unsharded = jax_unsharded(p, host, jax, np)
                if not agree and unsharded and not compare(want, unsharded[0], p.dtype, np, ml_dtypes)[0]:
                    # JAX's own results depend on the input shardings (XLA 0.4's partitioner did so
                    # for threefry bits): xshard is held to JAX's run on unsharded inputs.
                    again, worst_again, _ = compare(unsharded[0], save, p.dtype, np, ml_dtypes)
                    if again:
                        agree, worst, msg = True, worst_again, ""
                        r[f"{mode}_note"] = "JAX's sharded run differs from its run on unsharded inputs, which xshard matches"
                r[f"{mode}_ok"], r[f"{mode}_worst"] = agree, worst
                if msg:
                    r[f"{mode}_mismatch"] = msg
            c, err = xshard_counts(xshard, hlo, p.devices, flags)
            if err and f"{mode}_error" not in r:
                r[f"{mode}_error"] = f"partition: {err}"
            if c:
                r[f"xshard_{mode}"] = c
        if has_shardy:
            jax.config.update("jax_use_shardy_partitioner", True)
        print(line(r), flush=True)
    print(f"\n{len(results)} programs in {time.time() - start:.0f} s\n")
    print(format_table(results))
    wrong = [r["name"] for r in results if not all(r.get(f"{m}_ok") for m in MODES)]
    more = [r["name"] for r in results if ratio(r) is not None and ratio(r) > 1.0]
    if wrong:
        print(f"\nwrong or failed: {', '.join(wrong)}")
    print(f"xshard moves more bytes than XLA: {', '.join(more) if more else 'none'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"jax": jax.__version__, "commit": commit, "argv": argv,
                       "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "results": results},
                      f, indent=1, default=str)
    return 1 if wrong or (args.check_bytes and more) else 0


def ratio(r):
    x, s = r.get(f"xla_{MODES[0]}"), r.get(f"xshard_{MODES[0]}")
    if not x or not s:
        return None
    if x["bytes"] == 0:
        return 1.0 if s["bytes"] == 0 else float("inf")
    return s["bytes"] / x["bytes"]


def result_cell(r, mode):
    if mode not in MODES:
        return "n/a"
    if f"{mode}_error" in r:
        return "error"
    return "ok" if r.get(f"{mode}_ok") else "WRONG"


def line(r):
    errs = "; ".join(f"{m}: {r[k]}" for m in ("shardy", "gspmd") for k in (f"{m}_error", f"{m}_mismatch", f"{m}_note")
                     if k in r)
    x, s = r.get(f"xla_{MODES[0]}"), r.get(f"xshard_{MODES[0]}")
    cx = f"{collectives.summary(x)} {collectives.human_bytes(x['bytes'])}" if x else "-"
    cs = f"{collectives.summary(s)} {collectives.human_bytes(s['bytes'])}" if s else "-"
    return (f"{r['name']:20s} shardy {result_cell(r, 'shardy'):5s} gspmd {result_cell(r, 'gspmd'):5s} "
            f"XLA {cx:28s} xshard {cs}" + (f"  [{errs}]" if errs else ""))


def flops_cell(x, s):
    if not x or not s or not (x["flops"] or s["flops"]):
        return "-"
    cell = f"{x['flops']:,}, {s['flops']:,}"
    return cell + (f" ({s['flops'] / x['flops']:.1f}x)" if x["flops"] and s["flops"] != x["flops"] else "")


def format_table(results):
    rows = ["| program | dev | results shardy / gspmd | XLA collectives | XLA bytes | xshard collectives | "
            "xshard bytes | xshard / XLA bytes | dot FLOPs per device XLA, xshard |",
            "| --- | --: | --- | --- | --: | --- | --: | --: | --: |"]
    for r in results:
        x, s, g = r.get(f"xla_{MODES[0]}"), r.get(f"xshard_{MODES[0]}"), r.get("xshard_gspmd")
        xb = collectives.human_bytes(x["bytes"]) if x else "-"
        sb = collectives.human_bytes(s["bytes"]) if s else "-"
        if s and g and g["bytes"] != s["bytes"]:
            sb += f" (gspmd form: {collectives.human_bytes(g['bytes'])})"
        q = ratio(r)
        qs = "-" if q is None else ("inf" if q == float("inf") else f"{q:.2f}")
        rows.append(f"| {r['name']}: {r['what']} | {r['devices']} | {result_cell(r, 'shardy')} / "
                    f"{result_cell(r, 'gspmd')} | {collectives.summary(x) if x else '-'} | {xb} | "
                    f"{collectives.summary(s) if s else '-'} | {sb} | {qs} | {flops_cell(x, s)} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
