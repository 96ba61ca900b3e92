#!/usr/bin/env python3
"""Random shardings on meshes over permuted devices (what torch_xla's Mesh(device_ids=...) and a
Shardy mesh with device_ids write into a module: explicit device lists with no iota form).

For each case: a mesh shape of 8 devices, a random device order, random PartitionSpecs for the
operands, a dot constraint and the outputs of a small program (dot, tanh, transpose, reduce,
a second dot). Checks that `xshard run --check` gives the one-device run's outputs, and that
`xshard partition --report` moves exactly what it moves for the same module over devices 0..7 in
order (a relabelled mesh is the same mesh).

Usage: check_permuted_mesh.py XSHARD [CASES] [SEED]; exit 1 on the first failure.
"""
import itertools
import os
import random
import subprocess
import sys
import tempfile

MESHES = [((8,), ("a",)), ((4, 2), ("a", "b")), ((2, 4), ("a", "b")), ((2, 2, 2), ("a", "b", "c"))]


def sharding(shape, names, order, spec):
    """XLA's text of NamedSharding(Mesh(order.reshape(shape), names), P(*spec)): per data dim
    the mesh axes that split it (major first), the unused axes a replicated last dim whose groups
    are sorted, as XLA's PartialTile sorts them."""
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    used = [a for axes in spec for a in axes]
    rest = [a for a in names if a not in used]
    axis_order = used + rest
    sizes = {n: s for n, s in zip(names, shape)}
    tile_dims = [1] * len(spec)
    for d, axes in enumerate(spec):
        for a in axes:
            tile_dims[d] *= sizes[a]
    repl = 1
    for a in rest:
        repl *= sizes[a]
    devices = []
    for idx in itertools.product(*[range(sizes[a]) for a in axis_order]):
        pos = sum(i * strides[names.index(a)] for a, i in zip(axis_order, idx))
        devices.append(order[pos])
    if repl > 1:
        devices = [d for g in range(0, len(devices), repl) for d in sorted(devices[g:g + repl])]
    if all(t == 1 for t in tile_dims):
        return "{replicated}"
    dims = tile_dims + ([repl] if repl > 1 else [])
    text = "{devices=[" + ",".join(map(str, dims)) + "]" + ",".join(map(str, devices))
    return text + (" last_tile_dim_replicate}" if repl > 1 else "}")


def random_spec(rng, names, rank):
    spec = [[] for _ in range(rank)]
    axes = list(names)
    rng.shuffle(axes)
    for a in axes:
        if rng.random() < 0.6:
            spec[rng.randrange(rank)].append(a)
    return spec


def module(name, m, k, n, s):
    return f"""HloModule {name}, num_partitions=8

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}

ENTRY e {{
  x = f32[{m},{k}] parameter(0), sharding={s[0]}
  w = f32[{k},{n}] parameter(1), sharding={s[1]}
  d = f32[{m},{n}] dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  t = f32[{m},{n}] tanh(d)
  h = f32[{m},{n}] custom-call(t), custom_call_target="Sharding", sharding={s[2]}
  ht = f32[{n},{m}] transpose(h), dimensions={{1,0}}
  z = f32[] constant(0)
  r = f32[{n}] reduce(ht, z), dimensions={{1}}, to_apply=add
  rs = f32[{n}] custom-call(r), custom_call_target="Sharding", sharding={s[3]}
  g = f32[{m},{m}] dot(h, h), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
  ROOT o = (f32[{n}], f32[{m},{m}], f32[{n},{m}]) tuple(rs, g, ht)
}}
"""


def main():
    xshard = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 2026)
    with tempfile.TemporaryDirectory() as tmp:
        for case in range(cases):
            shape, names = rng.choice(MESHES)
            order = list(range(8))
            rng.shuffle(order)
            m, k, n = rng.choice([8, 12, 16]), rng.choice([8, 16]), rng.choice([8, 16, 24])
            specs = [random_spec(rng, names, 2) for _ in range(3)] + [random_spec(rng, names, 1)]
            texts = {}
            for label, devs in (("permuted", order), ("iota", list(range(8)))):
                path = os.path.join(tmp, f"{label}.hlo")
                with open(path, "w") as f:
                    f.write(module(f"case{case}", m, k, n, [sharding(shape, names, devs, s) for s in specs]))
                texts[label] = path
            what = f"case {case}: mesh {dict(zip(names, shape))} over {order}, specs {specs}, dims {m},{k},{n}"
            run = subprocess.run([xshard, "run", "--devices", "8", "--check", "--random-args", "1",
                                  texts["permuted"]], capture_output=True, text=True, timeout=300)
            if run.returncode != 0 or run.stdout.count(": ok") != 3:
                print(f"FAIL {what}: the sharded run differs from the one-device run\n{run.stdout}{run.stderr}")
                return 1
            lines = {}
            for label, path in texts.items():
                p = subprocess.run([xshard, "partition", path, "--report"], capture_output=True, text=True,
                                   timeout=300)
                lines[label] = [l for l in p.stdout.splitlines() if l.startswith("SPMD partitioning")]
            if lines["permuted"] != lines["iota"] or not lines["iota"]:
                print(f"FAIL {what}: {lines['permuted']} on the permuted devices, {lines['iota']} on 0..7")
                return 1
    print(f"{cases} cases: the one-device run's outputs, and the iota mesh's collectives and bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
