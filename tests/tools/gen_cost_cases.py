#!/usr/bin/env python3
"""Generates the cost model's test data (src/xshard/spmd/rule_plan_test.cc) in
tests/data/spmd_partition/: seed 000's four cases (f16 x[4,16] @ y[16,4], mesh a=4 x b=2) as
seed000_<case>_jax.hlo and bench/jax_compare's MLP training step (d1024 h4096 b256, data=4 x
model=2) as mlp_step_d1024_jax.hlo, each lowered by JAX with its defaults (jit with in_shardings
only: no out_shardings and no output flag in the header; GSPMD text form). For each, and for seed
000 at f32 2048x2048, prints what XLA's compiled program does per device: its collectives (kind,
shape, group size, bytes received by the ring model) and the FLOPs of its dots.

Run: /tmp/jaxvenv/bin/python tests/tools/gen_cost_cases.py  (any venv with jax[cpu]==0.10.2;
bench/jax_compare/jax_compare.py --setup makes one)
"""
import os
import re
import shutil
import sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_use_shardy_partitioner", False)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "jax_compare"))
import workloads
from jax.sharding import NamedSharding, PartitionSpec as P

DATA = os.path.join(HERE, "..", "data", "spmd_partition")
out = os.environ.get("GEN_COST_OUT", "/tmp/gen_cost_cases")
os.makedirs(out, exist_ok=True)
BYTES = {"f32": 4, "f16": 2, "bf16": 2, "s32": 4, "pred": 1, "f64": 8}

def nbytes(dt, dims):
    n = 1
    for d in dims.split(","):
        if d: n *= int(d)
    return n * BYTES.get(dt, 4)

def summarize(text):
    shapes = {}
    for line in text.splitlines():
        m = re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = (\w+)\[([\d,]*)\]", line)
        if m: shapes[m.group(1)] = (m.group(2), m.group(3))
    colls, flops = [], 0.0
    for line in text.splitlines():
        m = re.search(r"= \(?(\w+)\[([\d,]*)\].*? (all-gather|all-reduce|collective-permute|reduce-scatter|all-to-all)(-start)?\(%?([\w.\-]+)", line)
        if m:
            dt, dims, kind, _, opn = m.groups()
            odt, odims = shapes.get(opn, (dt, dims))
            g = 1
            gm = re.search(r"replica_groups=\[(\d+),(\d+)\]", line)
            mm = re.search(r"replica_groups=mesh\[([^\]]*)\][^{]*\{([^}]*)\}", line)
            if gm: g = int(gm.group(2))
            elif mm:
                sizes = dict((k.strip("'"), int(v)) for k, v in (p.split("=") for p in mm.group(1).split(",")))
                for a in mm.group(2).split(","):
                    g *= sizes[a.strip().strip("'")]
            else:
                gm = re.search(r"replica_groups=\{\{([\d,]+)\}", line)
                if gm: g = len(gm.group(1).split(","))
            res, opb = nbytes(dt, dims), nbytes(odt, odims)
            tm = re.search(r"= \((.*?)\) (all-reduce)", line)
            if tm:
                res = sum(nbytes(t, d) for t, d in re.findall(r"(\w+)\[([\d,]*)\]", tm.group(1)))
                dims = "tuple"
            b = {"all-gather": res * (g - 1) // g, "all-reduce": 2 * res * (g - 1) // g,
                 "reduce-scatter": opb * (g - 1) // g, "all-to-all": opb * (g - 1) // g,
                 "collective-permute": opb}[kind]
            colls.append((kind, f"{dt}[{dims}]", g, b))
        m = re.search(r"= \w+\[([\d,]*)\][^ ]* dot\(%?([\w.\-]+), .*lhs_contracting_dims=\{([\d,]*)\}", line)
        if m:
            rdims, lhs, lc = m.groups()
            ld = [int(x) for x in shapes[lhs][1].split(",") if x]
            k = 1
            for c in lc.split(","):
                if c: k *= ld[int(c)]
            r = 1
            for d in rdims.split(","):
                if d: r *= int(d)
            flops += 2 * r * k
    return colls, flops

def run(name, fn, mesh_shape, axes, in_specs, args):
    devs = np.array(jax.devices()[:8]).reshape(mesh_shape)
    mesh = jax.sharding.Mesh(devs, axes)
    in_sh = tuple(NamedSharding(mesh, s) for s in in_specs)
    placed = [jax.device_put(a, s) for a, s in zip(args, in_sh)]
    lowered = jax.jit(fn, in_shardings=in_sh).lower(*placed)
    open(f"{out}/{name}.hlo", "w").write(lowered.as_text(dialect="hlo"))
    text = lowered.compile().as_text()
    open(f"{out}/{name}.xla.txt", "w").write(text)
    colls, flops = summarize(text)
    print(f"{name}: XLA {len(colls)} collectives, {sum(c[3] for c in colls)} B/device, {flops:.4g} dot FLOP/device")
    for c in colls: print("   ", c)

cases = {"inner": (P(None, "a"), P("a", None)), "mismatch": (P(None, "a"), P("b", None)),
         "outer": (P("b", "a"), P("b", None)), "full": (P("b", "a"), P("b", "a"))}
for case, (xs, ys) in cases.items():
    x = np.repeat(np.arange(1, 5, dtype=np.float16)[:, None], 16, axis=1)
    run(f"seed000_{case}_f16", jnp.matmul, (4, 2), ("a", "b"), [xs, ys], [x, x.T.copy()])
    r = np.random.default_rng(1)
    run(f"seed000_{case}_2048", jnp.matmul, (4, 2), ("a", "b"), [xs, ys],
        [r.standard_normal((2048, 2048), dtype=np.float32), r.standard_normal((2048, 2048), dtype=np.float32)])
w = workloads._mlp()
run("mlp_step", w.fn, w.mesh_shape, w.axis_names, w.in_specs, [a.astype(np.float32) for a in w.make_args()])

for case in cases:
    shutil.copy(f"{out}/seed000_{case}_f16.hlo", f"{DATA}/seed000_{case}_jax.hlo")
shutil.copy(f"{out}/mlp_step.hlo", f"{DATA}/mlp_step_d1024_jax.hlo")
