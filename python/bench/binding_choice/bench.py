"""Call overhead of the same trivial functions bound with nanobind and pybind11 (run from the
folder holding the two CMake build trees b-nb/ and b-pb/)."""
import sys, timeit
sys.path[:0] = ["b-nb", "b-pb"]
import nbmod, pbmod
for r in range(3):
    for name, m in (("nanobind", nbmod), ("pybind11", pbmod)):
        n = 1_000_000
        t = min(timeit.repeat(lambda: m.add(1, 2), number=n, repeat=5)) / n * 1e9
        t2 = min(timeit.repeat(lambda: m.noop(), number=n, repeat=5)) / n * 1e9
        t3 = min(timeit.repeat(lambda: m.dims([4, 16, 2]), number=200000, repeat=5)) / 200000 * 1e9
        print(f"{name}: add(1,2) {t:.0f} ns  noop() {t2:.0f} ns  dims([4,16,2]) {t3:.0f} ns")
