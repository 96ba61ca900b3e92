#!/usr/bin/env python3
"""xshard vs PyTorch/XLA SPMD on a suite of small torch programs (programs.py).

For each program, torch_xla runs it with SPMD on 8 virtual CPU devices (PJRT_DEVICE=CPU,
CPU_NUM_DEVICES=8, xr.use_spmd(), xs.Mesh + xs.mark_sharding), in a fresh process with
XLA_FLAGS=--xla_dump_to=... --xla_dump_hlo_as_text --xla_dump_large_constants
--xla_dump_hlo_pass_re=spmd-partitioning. The outputs of a program are synced with
torch_xla._XLAC._xla_sync_multi(outputs), so the compiled graph returns exactly them, in order.
Kept in out/<program>/:
  torch_xla.hlo       the unpartitioned module XLA compiled (SyncTensorsGraph.*.before_optimizations:
                      num_partitions=8, allow_spmd_sharding_propagation_to_output, shardings)
  irtohlo.hlo         the same graph as torch_xla._XLAC._get_xla_tensors_hlo(outputs) prints it
                      (typed operands, no num_partitions; constants of more than a few elements are
                      printed as {...}, so such modules cannot run: n/a)
  xla_propagated.hlo  XLA's module after its sharding propagation (every instruction annotated)
  xla_spmd.hlo        XLA's partitioned program (after spmd-partitioning, before optimizations)
  xla_after.txt       XLA's final program (cpu_after_optimizations), whose collectives are counted
  arg<i>.npy          the parameters in HLO order: torch_xla numbers them as
                      _get_tensors_xla_device_data_node(outputs) lists the device data, scalars it
                      lifts included (learning rates, Adam's betas and bias corrections as f64 / f32
                      / bf16 scalars, RNG seeds); the script checks the dumped parameter shapes
  want<i>.npy         torch_xla's outputs (bf16 ones widened to f32); ref<i>.npy torch eager's on CPU
  spmd/dev<d>/        each device's shards of the arguments and outputs (torch_xla's local shards,
                      padded as the device holds them) for xla_spmd.hlo
xshard then runs `xshard run FILE --devices 8 --args arg*.npy --save DIR` on torch_xla.hlo,
irtohlo.hlo and xla_propagated.hlo, and `xshard run xla_spmd.hlo --spmd --devices 8 --args-dir
spmd --save DIR`, and compares with torch_xla's outputs (numpy allclose: f32 rtol 1e-3, atol 1e-4 x
max|out|; bf16 1.6e-2, 1e-2; integers exact). It counts the collectives of `xshard partition
--report` (its printed program, for torch_xla.hlo and xla_propagated.hlo) and of XLA's final
program, with the bytes each device receives (bench/xla_compare/collectives.py's ring model; XLA's
CPU backend widens bf16 all-reduces to f32, which doubles their bytes). torch_xla's outputs are also
checked against torch eager on the CPU (the `eager` column: a sanity check of the suite, never
xshard's fault; `skip` for programs whose eager run differs by design, such as dropout's RNG).

Exits 1 on any wrong result or xshard error (a program torch_xla fails to build counts too).

torch_xla is not in the repository's venvs: make one outside the checkout, then point the script
at its python with --python or $XSHARD_TORCH_XLA_PYTHON (default /tmp/txla/bin/python); the script
re-executes itself with that interpreter when the current one lacks torch_xla.

  python3 -m venv /tmp/txla && /tmp/txla/bin/pip install torch==2.9.0 torch-xla==2.9.0 numpy
  bench/torch_xla_compare/torch_xla_compare.py [--python /tmp/txla/bin/python] [--xshard build/xshard]
      [--only NAME]... [--list] [--out DIR] [--json FILE] [--timeout S]

A run of the 63 programs takes ~10 min on 2 cores (torch_xla's start-up and compiles dominate).
bench/torch_xla_compare/export_tests.py copies programs of a run into tests/data/torch_xla/ for the
torch-free ctest `torch_xla_modules` (tests/data/torch_xla/run_torch_xla_test.py).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "xla_compare"))
sys.path.insert(0, str(HERE))
DEVICES = 8
DEFAULT_PYTHON = os.environ.get("XSHARD_TORCH_XLA_PYTHON", "/tmp/txla/bin/python")
TOLERANCE = {"f32": (1e-3, 1e-4), "bf16": (1.6e-2, 1e-2)}
# torch_xla vs torch eager on the CPU (a sanity check of the suite, not of xshard): looser.
EAGER_TOLERANCE = {"f32": (1e-3, 1e-3), "bf16": (5e-2, 3e-2)}
# The module texts xshard runs (with the same arguments): torch_xla's dump, its IrToHlo print, and
# XLA's own module after sharding propagation (every instruction annotated, before partitioning);
# and XLA's partitioned SPMD program (after spmd-partitioning), run with --spmd on each device's
# shards of the arguments (torch_xla's local shards) against each device's shards of the outputs.
FORMS = ("torch_xla", "irtohlo", "xla_propagated", "xla_spmd")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--python", default=DEFAULT_PYTHON, help="python of a venv with torch_xla")
    p.add_argument("--xshard", default=str(REPO / "build" / "xshard"), help="xshard binary")
    p.add_argument("--only", action="append", default=[], help="only programs whose name contains this")
    p.add_argument("--list", action="store_true", help="list the programs and exit")
    p.add_argument("--out", default=str(HERE / "out"), help="work directory (default out/)")
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--timeout", type=int, default=600, help="seconds per torch_xla / xshard command")
    p.add_argument("--generate", default=None, help=argparse.SUPPRESS)  # child mode: one program
    return p.parse_args(argv)


def ensure_torch_xla(args, argv):
    try:
        import torch_xla  # noqa: F401
        import numpy  # noqa: F401
        return
    except ImportError:
        pass
    py = Path(args.python)
    if not py.exists():
        sys.exit(f"torch_xla_compare: no torch_xla here and no {py}; create the venv:\n"
                 f"  python3 -m venv /tmp/txla && /tmp/txla/bin/pip install torch==2.9.0 torch-xla==2.9.0 numpy")
    if os.environ.get("_TXLA_REEXEC"):
        sys.exit(f"torch_xla_compare: {py} has no torch_xla / numpy")
    os.environ["_TXLA_REEXEC"] = "1"
    os.execv(str(py), [str(py), __file__, *argv])


# ------------------------------------------------------------------------------------------------
# Child: run one program under torch_xla (and eagerly), write its HLO, inputs and outputs.


def to_numpy(t):
    import numpy as np
    import torch
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.float().numpy(), "bf16"
    return t.numpy(), {torch.float32: "f32", torch.int64: "s64", torch.int32: "s32",
                       torch.bool: "pred"}.get(t.dtype, str(t.dtype))


def save_arg(path, t):
    """An HLO parameter as .npy; bf16 as numpy 'V2' holding the raw bits (xshard reads it as bf16)."""
    import numpy as np
    import torch
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        a = np.frombuffer(t.view(torch.int16).numpy().tobytes(), dtype="V2").reshape(tuple(t.shape))
    else:
        a = t.numpy()
    np.save(path, a)


def generate(name, wdir):
    import numpy as np
    import torch
    import torch_xla
    import torch_xla.runtime as xr
    import programs

    xr.use_spmd()
    prog = {p.name: p for p in programs.all_programs()}[name]
    wdir = Path(wdir)
    dump = wdir / "dump"
    meta = {"name": name, "dtype": prog.dtype, "atol": prog.atol}

    torch_xla.sync()
    outs = prog.fn(programs.Ctx(xla=True))
    (wdir / "irtohlo.hlo").write_text(torch_xla._XLAC._get_xla_tensors_hlo(outs))
    _, datas = torch_xla._XLAC._get_tensors_xla_device_data_node(outs)
    meta["args"] = []
    for i, d in enumerate(datas):
        save_arg(wdir / f"arg{i}.npy", d)
        meta["args"].append([str(d.dtype), list(d.shape), torch_xla._XLAC._get_xla_sharding_spec(d)])
    # Each device's shard of every parameter (padded as the device holds it), for XLA's own
    # partitioned program (the xla_spmd form).
    spmd = wdir / "spmd"
    try:
        for i, shards in enumerate(torch_xla._XLAC._get_local_shards(datas)):
            for t, dev in shards:
                (spmd / f"dev{int(dev.split(':')[1])}").mkdir(parents=True, exist_ok=True)
                save_arg(spmd / f"dev{int(dev.split(':')[1])}" / f"arg{i}.npy", t)
    except Exception as e:  # noqa: BLE001  (no xla_spmd form then)
        meta["spmd_error"] = f"{type(e).__name__}: {e}"
    shapes = [list(d.shape) for d in datas]
    d = None
    del datas, d  # unreferenced, the buffers of parameters updated in place can be donated (aliased)
    before = set(os.listdir(dump)) if dump.exists() else set()
    torch_xla._XLAC._xla_sync_multi(outs, [], True)
    new = sorted(set(os.listdir(dump)) - before)
    pre = [f for f in new if "SyncTensorsGraph" in f and f.endswith("before_optimizations.txt")]
    post = [f for f in new if "SyncTensorsGraph" in f and f.endswith("cpu_after_optimizations.txt")]
    if len(pre) != 1 or len(post) != 1:
        raise RuntimeError(f"expected one SyncTensorsGraph compile, got {pre} / {post}")
    text = (dump / pre[0]).read_text()
    # The compiled graph numbers its parameters as _get_tensors_xla_device_data_node did: check.
    params = {int(i): [int(d) for d in dims.split(",") if d]
              for dims, i in re.findall(r"= \w+\[([0-9,]*)\]\S* parameter\((\d+)\)",
                                             text[text.index("\nENTRY"):])}
    if [params.get(i) for i in range(len(shapes))] != shapes or len(params) != len(shapes):
        raise RuntimeError(f"parameters of {pre[0]} {params} do not match the device data {shapes}")
    shutil.copy(dump / pre[0], wdir / "torch_xla.hlo")
    shutil.copy(dump / post[0], wdir / "xla_after.txt")
    prop = [f for f in new if "SyncTensorsGraph" in f and f.endswith("before_spmd-partitioning.txt")]
    if len(prop) == 1:
        shutil.copy(dump / prop[0], wdir / "xla_propagated.hlo")
    part = [f for f in new if "SyncTensorsGraph" in f and "after_spmd-partitioning" in f]
    if len(part) == 1 and "spmd_error" not in meta:
        try:
            for i, shards in enumerate(torch_xla._XLAC._get_local_shards(outs)):
                for t, dev in shards:
                    np.save(spmd / f"dev{int(dev.split(':')[1])}" / f"want{i}.npy", to_numpy(t)[0])
            shutil.copy(dump / part[0], wdir / "xla_spmd.hlo")
        except Exception as e:  # noqa: BLE001
            meta["spmd_error"] = f"{type(e).__name__}: {e}"
    meta["outs"] = []
    for i, o in enumerate(outs):
        a, dt = to_numpy(o)
        np.save(wdir / f"want{i}.npy", a)
        meta["outs"].append([dt, list(a.shape)])
    # torch eager on the CPU, after the XLA run: autograd sizes its per-device queues at the first
    # backward, which must see the XLA device.
    ref = [to_numpy(o)[0] for o in prog.fn(programs.Ctx(xla=False))]
    for i, r in enumerate(ref):
        np.save(wdir / f"ref{i}.npy", r)
    # torch_xla against eager
    rt, at = EAGER_TOLERANCE[prog.dtype]
    bad = []
    for i, (a, r) in enumerate(zip((np.load(wdir / f"want{i}.npy") for i in range(len(outs))), ref)):
        a64, r64 = a.astype(np.float64), r.astype(np.float64)
        tol = at * max(float(np.max(np.abs(r64[np.isfinite(r64)]), initial=0.0)), 1e-30)
        tol = tol if prog.atol is None else max(prog.atol, 1e-6)
        if a.shape != r.shape or not np.allclose(a64, r64, rtol=rt, atol=tol, equal_nan=True):
            bad.append(i)
    meta["eager"] = "skip" if not prog.eager_check else ("ok" if not bad else f"differs: outputs {bad}")
    (wdir / "meta.json").write_text(json.dumps(meta, indent=1))
    shutil.rmtree(dump, ignore_errors=True)


# ------------------------------------------------------------------------------------------------
# Driver


def run(cmd, timeout, env=None):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if p.returncode != 0:
        lines = [l for l in p.stderr.strip().splitlines() if "GSPMD sharding propagation" not in l]
        return None, (lines[-1] if lines else f"exit {p.returncode}")
    return p.stdout, None


def compare(wdir, save, meta, np):
    rtol, atol_frac = TOLERANCE[meta["dtype"]]
    agree, msgs = True, []
    for i, (dt, shape) in enumerate(meta["outs"]):
        ref = np.load(wdir / f"want{i}.npy")
        f = save / f"out{i}.npy"
        if not f.exists():
            return False, f"out{i}.npy missing"
        got = np.load(f)
        if got.dtype.kind == "V" and got.dtype.itemsize == 2:  # bf16 bits
            got = (got.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        if got.shape != ref.shape:
            agree = False
            msgs.append(f"out{i} shape {got.shape} != {ref.shape}")
            continue
        g64, r64 = got.astype(np.float64), ref.astype(np.float64)
        if ref.dtype.kind in "iub":
            bad = g64 != r64
        else:
            atol = atol_frac * max(float(np.max(np.abs(r64[np.isfinite(r64)]), initial=0.0)), 1e-30)
            if meta.get("atol") is not None:  # programs whose outputs span many magnitudes
                atol = meta["atol"]
            bad = ~np.isclose(g64, r64, rtol=rtol, atol=atol, equal_nan=True)
        if bad.any():
            agree = False
            j = tuple(int(x) for x in np.argwhere(bad)[0])
            msgs.append(f"out{i}: {int(bad.sum())} of {bad.size} differ, first at {j}: got {g64[j]:.8g}, "
                        f"want {r64[j]:.8g}")
    return agree, "; ".join(msgs)


def xshard_counts(xshard, hlo, timeout, collectives):
    out, err = run([xshard, "partition", str(hlo), "--devices", str(DEVICES), "--report"], timeout)
    if err:
        return None, err
    program, _, _ = out.partition("\nSPMD partitioning:")
    c = collectives.count(program, DEVICES)
    c["flops"] = collectives.dot_flops(program)
    return c, None


def main(argv):
    args = parse_args(argv)
    if args.list and not args.generate:
        ensure_torch_xla(args, argv)
    ensure_torch_xla(args, argv)
    if args.generate:
        generate(args.generate, args.out)
        return 0
    import numpy as np
    import collectives
    import programs

    every = programs.all_programs()
    if args.list:
        for p in every:
            print(f"{p.name:22s} {p.what}")
        return 0
    todo = [p for p in every if not args.only or any(o in p.name for o in args.only)]
    if not todo:
        print(f"no program matches {args.only}", file=sys.stderr)
        return 1
    xshard = Path(args.xshard)
    if not xshard.exists():
        print(f"no xshard binary at {xshard}", file=sys.stderr)
        return 1
    import torch
    import torch_xla
    print(f"torch {torch.__version__}, torch_xla {torch_xla.__version__}, {DEVICES} CPU devices; "
          f"xshard {xshard}", flush=True)
    out_root = Path(args.out)
    results = []
    start = time.time()
    for p in todo:
        r = {"name": p.name, "what": p.what}
        results.append(r)
        wdir = out_root / p.name
        shutil.rmtree(wdir, ignore_errors=True)
        (wdir / "dump").mkdir(parents=True)
        env = dict(os.environ, PJRT_DEVICE="CPU", CPU_NUM_DEVICES=str(DEVICES), TF_CPP_MIN_LOG_LEVEL="2",
                   XLA_FLAGS=f"--xla_dump_to={wdir / 'dump'} --xla_dump_hlo_as_text "
                             "--xla_dump_hlo_module_re=SyncTensorsGraph.* --xla_dump_large_constants "
                             "--xla_dump_hlo_pass_re=spmd-partitioning")
        _, err = run([sys.executable, __file__, "--generate", p.name, "--out", str(wdir)], args.timeout, env)
        if err:
            r["error"] = f"torch_xla: {err}"
            print(line(r), flush=True)
            continue
        meta = json.loads((wdir / "meta.json").read_text())
        r["eager"] = meta["eager"]
        n_args = len(meta["args"])
        arg_files = [str(wdir / f"arg{i}.npy") for i in range(n_args)]
        x = collectives.count((wdir / "xla_after.txt").read_text(), DEVICES)
        x["flops"] = collectives.dot_flops((wdir / "xla_after.txt").read_text())
        r["xla"] = x
        for form in FORMS:
            if not (wdir / f"{form}.hlo").exists():
                r[f"{form}_na"] = "not dumped"
                continue
            if "{...}" in (wdir / f"{form}.hlo").read_text():
                # _get_xla_tensors_hlo prints constants of more than a few elements as {...} (the
                # dump has them: --xla_dump_large_constants); such a module cannot run.
                r[f"{form}_na"] = "large constants elided ({...})"
                continue
            save = wdir / f"{form}_out"
            shutil.rmtree(save, ignore_errors=True)
            cmd = [str(xshard), "run", str(wdir / f"{form}.hlo"), "--devices", str(DEVICES), "--save", str(save)]
            if form == "xla_spmd":
                cmd += ["--spmd", "--args-dir", str(wdir / "spmd")]
            elif arg_files:
                cmd += ["--args", *arg_files]
            _, err = run(cmd, args.timeout)
            if err:
                r[f"{form}_error"] = err
                continue
            if form == "xla_spmd":
                oks, msgs = zip(*(compare(wdir / "spmd" / f"dev{d}", save / f"dev{d}", meta, np)
                                  for d in range(DEVICES)))
                ok, msg = all(oks), "; ".join(f"dev{d}: {m}" for d, m in enumerate(msgs) if m)
            else:
                ok, msg = compare(wdir, save, meta, np)
            r[f"{form}_ok"] = ok
            if msg:
                r[f"{form}_mismatch"] = msg
        c, err = xshard_counts(xshard, wdir / "torch_xla.hlo", args.timeout, collectives)
        if err:
            r.setdefault("torch_xla_error", f"partition: {err}")
        else:
            r["xshard"] = c
        if (wdir / "xla_propagated.hlo").exists():
            c, err = xshard_counts(xshard, wdir / "xla_propagated.hlo", args.timeout, collectives)
            if err:
                r.setdefault("xla_propagated_error", f"partition: {err}")
            else:
                r["xshard_prop"] = c
        print(line(r), flush=True)
    print(f"\n{len(results)} programs in {time.time() - start:.0f} s\n")
    print(format_table(results, collectives))
    wrong = [r["name"] for r in results if not all(r.get(f"{f}_ok") or f"{f}_na" in r for f in FORMS)]
    more = [r["name"] for r in results if ratio(r) is not None and ratio(r) > 1.0]
    if wrong:
        print(f"\nwrong or failed: {', '.join(wrong)}")
    print(f"xshard moves more bytes than XLA: {', '.join(more) if more else 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                               "results": results}, indent=1, default=str))
    return 1 if wrong else 0


def ratio(r):
    x, s = r.get("xla"), r.get("xshard")
    if not x or not s:
        return None
    if x["bytes"] == 0:
        return 1.0 if s["bytes"] == 0 else float("inf")
    return s["bytes"] / x["bytes"]


def cell(r, form):
    if "error" in r:
        return "-"
    if f"{form}_na" in r:
        return "n/a"
    if f"{form}_error" in r:
        return "error"
    return "ok" if r.get(f"{form}_ok") else "WRONG"


def line(r):
    import collectives
    notes = "; ".join(f"{k}: {r[k]}" for k in ["error"] + [f"{f}_{w}" for f in FORMS for w in ("error", "mismatch")]
                      if k in r)
    if r.get("eager") not in (None, "ok", "skip"):
        notes += f"{'; ' if notes else ''}torch_xla vs eager {r['eager']}"
    x, s = r.get("xla"), r.get("xshard")
    cx = f"{collectives.summary(x)} {collectives.human_bytes(x['bytes'])}" if x else "-"
    cs = f"{collectives.summary(s)} {collectives.human_bytes(s['bytes'])}" if s else "-"
    return (f"{r['name']:22s} dump {cell(r, 'torch_xla'):5s} irtohlo {cell(r, 'irtohlo'):5s} "
            f"propagated {cell(r, 'xla_propagated'):5s} spmd {cell(r, 'xla_spmd'):5s} "
            f"XLA {cx:28s} xshard {cs}" + (f"  [{notes}]" if notes else ""))


def format_table(results, collectives):
    rows = ["| program | xshard on dump / IrToHlo / XLA-propagated / XLA-partitioned | torch_xla vs eager | XLA collectives | XLA bytes | "
            "xshard collectives | xshard bytes | xshard / XLA bytes | xshard bytes on XLA's propagated module |",
            "| --- | --- | --- | --- | --: | --- | --: | --: | --: |"]
    for r in results:
        x, s = r.get("xla"), r.get("xshard")
        q = ratio(r)
        qs = "-" if q is None else ("inf" if q == float("inf") else f"{q:.2f}")
        rows.append(f"| {r['name']} | {' / '.join(cell(r, f) for f in FORMS)} | {r.get('eager', '-')} | "
                    f"{collectives.summary(x) if x else '-'} | "
                    f"{collectives.human_bytes(x['bytes']) if x else '-'} | "
                    f"{collectives.summary(s) if s else '-'} | "
                    f"{collectives.human_bytes(s['bytes']) if s else '-'} | {qs} | "
                    f"{collectives.human_bytes(r['xshard_prop']['bytes']) if r.get('xshard_prop') else '-'} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
