"""Counts the collectives of an SPMD HLO program (XLA's compiled text or xshard's partitioned one)
and the bytes each device receives, with the ring model of `xshard partition --report`:
an all-gather (g-1)/g of its result, an all-reduce 2(g-1)/g of it, a reduce-scatter / all-to-all
(g-1)/g of its operand, a collective-permute the whole operand. Async pairs count once (at -done,
whose shape is the result); a collective inside a loop body counts once (static count).
"""
import re

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "u32": 4, "s64": 8, "u64": 8,
                "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16,
                "f8e4m3fn": 1, "f8e5m2": 1, "s4": 1, "u4": 1}
_OPS = "|".join(sorted((k + s for k in KINDS for s in ("", "-start", "-done")), key=len, reverse=True))
_INST = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s+(" + _OPS + r")\((.*)$")
_ARRAY = re.compile(r"\b([a-z]+[0-9]*[a-z0-9]*)\[([0-9,]*)\]")
_NUM_PARTITIONS = re.compile(r"num_partitions=(\d+)")


def _array_bytes(shape_text):
    """Sum of the array bytes in a shape ("f32[4,8]{1,0}" or a tuple of them)."""
    total = 0
    for dtype, dims in _ARRAY.findall(shape_text):
        if dtype not in _DTYPE_BYTES:
            continue
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        total += n * _DTYPE_BYTES[dtype]
    return total


def _tuple_elements(shape_text):
    """Top-level elements of a tuple shape "(a, b, c)" (or [shape_text] for an array)."""
    s = shape_text.strip()
    if not s.startswith("("):
        return [s]
    parts, depth, cur = [], 0, ""
    for ch in s[1:-1]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def _group_size(attrs, devices):
    # Mesh form: replica_groups=mesh['a'=1,'b'=4,'c'=2] [, device_ids=(...)] {'b'}: the named axes;
    # a sub-axis 'b':(2)2 (pre-size 2, size 2) counts its own size, not the whole axis's.
    m = re.search(r"replica_groups=mesh\[([^\]]*)\][^{]*\{([^}]*)\}", attrs)
    if m:
        sizes = {k: int(v) for k, v in re.findall(r"'([^']+)'=(\d+)", m.group(1))}
        g = 1
        for axis, sub in re.findall(r"'([^']+)'(?::\(\d+\)(\d+))?", m.group(2)):
            g *= int(sub) if sub else sizes.get(axis, 1)
        return g
    m = re.search(r"replica_groups=\[(\d+),(\d+)\]<=", attrs)
    if m:
        return int(m.group(2))
    m = re.search(r"replica_groups=\{(\{[0-9,]*\})", attrs)
    if m:
        return len([x for x in m.group(1).strip("{}").split(",") if x])
    return devices  # replica_groups={} or none: every device


def count(hlo_text, devices):
    """Returns {"count": n, "bytes": b, "by_kind": {kind: [n, bytes]}, "list": [(kind, shape, bytes)]}
    for the collectives of an SPMD program run on `devices` devices."""
    m = _NUM_PARTITIONS.search(hlo_text)
    if m and int(m.group(1)) > 1:
        devices = int(m.group(1))
    starts = {}  # name of an async start -> (kind, its attributes, its shape)
    out = {"count": 0, "bytes": 0, "by_kind": {}, "list": []}
    for line in hlo_text.splitlines():
        mi = _INST.match(line)
        if not mi:
            continue
        name, shape, op, rest = mi.groups()
        if op.endswith("-start"):
            starts[name] = (op[:-len("-start")], rest, shape)
            continue
        if op.endswith("-done"):
            kind = op[:-len("-done")]
            operand = re.match(r"\s*(?:[^%\s]+\s+)?%?([\w.\-]+)", rest)
            attrs = starts.get(operand.group(1) if operand else "", (kind, rest, shape))[1]
        else:
            kind, attrs = op, rest
        g = _group_size(attrs, devices)
        result = _array_bytes(shape)
        if kind == "all-gather":
            b = result * (g - 1) // g
        elif kind == "all-reduce":
            b = 2 * result * (g - 1) // g
        elif kind == "reduce-scatter":
            b = result * (g - 1)  # (g-1)/g of an operand g times the result
        elif kind == "all-to-all":
            b = result * (g - 1) // g
        else:  # collective-permute: the whole operand (= the result)
            b = result
        if g <= 1 and kind != "collective-permute":
            b = 0
        out["count"] += 1
        out["bytes"] += b
        k = out["by_kind"].setdefault(kind, [0, 0])
        k[0] += 1
        k[1] += b
        out["list"].append((kind, shape, b))
    return out


def summary(c):
    """'2 (ar 1, ag 1)' style text for a table cell."""
    abbrev = {"all-reduce": "ar", "all-gather": "ag", "reduce-scatter": "rs", "all-to-all": "a2a",
              "collective-permute": "cp"}
    if not c["count"]:
        return "0"
    return f"{c['count']} (" + ", ".join(f"{abbrev[k]} {v[0]}" for k, v in sorted(c["by_kind"].items())) + ")"


def human_bytes(b):
    if b < 1024:
        return f"{b} B"
    if b < 1024 * 1024:
        return f"{b / 1024:.1f} KiB"
    return f"{b / 1024 / 1024:.2f} MiB"


_DEF = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\S+)\s+([\w\-]+)\((.*)$")
_OPERAND = re.compile(r"(?:^|,\s*)(?:[a-z0-9]+\[[0-9,]*\](?:\{[^}]*\})?\s+)?%?([\w.\-]+)")


def _dims(shape_text):
    m = _ARRAY.search(shape_text)
    return [int(d) for d in m.group(2).split(",") if d] if m else None


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def dot_flops(hlo_text):
    """FLOPs of the dots and convolutions of a program (2 per multiply-add), each counted once
    (a loop body's once, like the collectives): one device's work in an SPMD program."""
    shapes, total = {}, 0
    for line in hlo_text.splitlines():
        m = _DEF.match(line)
        if not m:
            # A computation's header: names are looked up within it (a printed program may reuse a
            # name in another computation), and an operand is defined before its users.
            if line.rstrip().endswith("{"):
                shapes = {}
            continue
        shapes[m.group(1)] = m.group(2)
        if m.group(3) not in ("dot", "convolution"):
            continue
        result = _dims(m.group(2))
        args = m.group(4)
        ops = [o for o in _OPERAND.findall(args.split(")")[0])][:2]
        if result is None or len(ops) < 2 or ops[0] not in shapes or ops[1] not in shapes:
            continue
        lhs, rhs = _dims(shapes[ops[0]]), _dims(shapes[ops[1]])
        if m.group(3) == "dot":
            c = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", args)
            k = _prod(lhs[int(d)] for d in c.group(1).split(",") if d) if c else 1
            total += 2 * _prod(result) * k
        else:  # convolution: each output element takes kernel elements / output features MACs
            labels = re.search(r"dim_labels=[^_]+_([^\-]+)->", args)
            o = labels.group(1).index("o") if labels else len(rhs) - 1
            total += 2 * _prod(result) * (_prod(rhs) // max(rhs[o], 1))
    return total
