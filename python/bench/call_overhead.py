"""Call overhead of a compiled program from Python, xshard vs JAX's dispatch, on the same small
program (y = x * 2 + 1 on f32[16], one device and 8 devices, x split 8 ways).

Run with a Python that has JAX and sees the built module, e.g.
  PYTHONPATH=build/python bench/jax_compare/.venv/bin/python python/bench/call_overhead.py
Prints the median per-call time of: xshard `prog(x)` from Python (numpy in, numpy out), the same
call's work timed in a C++ loop (`prog.time(whole_call=True)`: scatter, run, gather, no Python),
the per-device execution alone (`prog.time`, arguments placed once), and JAX's jitted call on an
already placed array with block_until_ready (and with a numpy argument, transferred every call).
"""
import os
import statistics
import sys
import time

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8").strip()
import numpy as np  # noqa: E402

import xshard  # noqa: E402


def per_call_us(fn, calls=5000, warmup=100):
    """Median of individually timed calls, in microseconds (a median, like prog.time's: on a
    loaded machine the mean is dominated by a few descheduled calls)."""
    for _ in range(warmup):
        fn()
    clock = time.perf_counter_ns
    samples = []
    for _ in range(calls):
        start = clock()
        fn()
        samples.append(clock() - start)
    return statistics.median(samples) / 1e3


def main():
    x = np.arange(16, dtype=np.float32)
    rows = []
    for devices in (1, 8):
        mesh = xshard.make_mesh((devices,), ("d",))
        s = xshard.NamedSharding(mesh, xshard.P("d"))
        prog = None
        if xshard.jax_available():
            import jax
            import jax.numpy as jnp
            from jax.sharding import Mesh, NamedSharding, PartitionSpec
            f = lambda v: v * 2 + 1  # noqa: E731
            prog = xshard.from_jax(f, x, in_shardings=[s], out_shardings=[s])
            jmesh = Mesh(np.array(jax.devices()[:devices]), ("d",))
            js = NamedSharding(jmesh, PartitionSpec("d"))
            jf = jax.jit(f, in_shardings=js, out_shardings=js)
            jx = jax.device_put(x, js)
            np.testing.assert_array_equal(np.asarray(jf(jx)), prog(x))
            rows.append((devices, "jax jit(x) placed, block_until_ready",
                         per_call_us(lambda: jf(jx).block_until_ready())))
            rows.append((devices, "jax jit(numpy x) + np.asarray(result)",
                         per_call_us(lambda: np.asarray(jf(x)))))
        else:
            prog = xshard.compile("""
HloModule f
ENTRY e {
  x = f32[16] parameter(0)
  two = f32[] constant(2)
  one = f32[] constant(1)
  b2 = f32[16] broadcast(two), dimensions={}
  b1 = f32[16] broadcast(one), dimensions={}
  m = f32[16] multiply(x, b2)
  ROOT y = f32[16] add(m, b1)
}""", in_shardings=[s], out_shardings=[s])
        np.testing.assert_array_equal(prog(x), x * 2 + 1)
        rows.append((devices, "xshard prog(x) from Python", per_call_us(lambda: prog(x))))
        rows.append((devices, "xshard binding alone (prog._run([x]))",
                     per_call_us(lambda: prog._run([x]))))
        t = prog.time(x, warmup=100, iters=5000, whole_call=True)
        rows.append((devices, "xshard Run in a C++ loop (same work)", t.median * 1e3))
        t = prog.time(x, warmup=100, iters=5000)
        rows.append((devices, "xshard prog.time (C++ loop, placed)", t.median * 1e3))
    print(f"{'devices':>7}  {'what':<42}{'median us/call':>15}")
    for devices, what, us in rows:
        print(f"{devices:>7}  {what:<42}{us:>15.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
