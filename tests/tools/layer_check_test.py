#!/usr/bin/env python3
"""Shows that layer_check.py fails on planted violations: it runs the check on a copy of the
checkout's sources (src/xshard/, python/, bench/, examples/: C++ files and CMakeLists only), first
unchanged (must pass), then with one planted problem at a time, each of which must make it exit 1
with a line naming the file and the edge:
  - a missing link edge: spmd's CMake DEPS without xs_text (spmd/report.cc prints instructions);
  - a Python-to-CLI include: python/src/sharding.cc including xshard/tools/cli.h;
  - an example including the CLI, which the examples do not link;
  - a benchmark including a layer its xs_bench() call does not link;
  - a forbidden edge: rules (a sibling of text) including the printer;
  - an EDGES entry that CMake does not link (autoshard's DEPS without xs_jit).
Usage: layer_check_test.py [SOURCE_ROOT]   (default: this checkout)
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
CHECK = HERE / "layer_check.py"
FOLDERS = ["src/xshard", "python", "bench", "examples"]


def copy_sources(root, dest):
    for folder in FOLDERS:
        base = root / folder
        for path in base.rglob("*"):
            rel = path.relative_to(root)
            if any(part.startswith(".") for part in rel.parts) or not path.is_file():
                continue
            if path.suffix in (".cc", ".h", ".inc") or path.name == "CMakeLists.txt":
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest / rel)


def run_check(tree):
    r = subprocess.run([sys.executable, str(CHECK), str(tree)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def replace(path, old, new):
    text = path.read_text()
    if old not in text:
        raise AssertionError(f"{path}: '{old}' not found; update the planted case")
    path.write_text(text.replace(old, new, 1))


def prepend_include(path, header):
    lines = path.read_text().splitlines(keepends=True)
    # After the opening comment lines, before the first include.
    at = next(i for i, line in enumerate(lines) if line.startswith("#include"))
    lines.insert(at, f'#include "{header}"\n')
    path.write_text("".join(lines))


def first_example(tree):
    return sorted((tree / "examples").glob("*.cc"))[0]


# (description, plant(tree), substrings every one of which some output line must hold)
CASES = [
    ("missing link edge spmd -> text",
     lambda t: replace(t / "src/xshard/spmd/CMakeLists.txt", "DEPS xs_propagation xs_text",
                       "DEPS xs_propagation"),
     ["spmd/report.cc:", "missing link edge spmd -> text"]),
    ("Python module includes the CLI",
     lambda t: prepend_include(t / "python/src/sharding.cc", "xshard/tools/cli.h"),
     ["python/src/sharding.cc:", "missing link edge _xshard -> tools"]),
    ("example includes the CLI",
     lambda t: prepend_include(first_example(t), "xshard/tools/cli.h"),
     ["examples/", "-> tools"]),
    ("benchmark includes an unlinked layer",
     lambda t: prepend_include(t / "bench/gemm_bench.cc", "xshard/runtime/client.h"),
     ["bench/gemm_bench.cc:", "missing link edge gemm_bench -> runtime"]),
    ("forbidden edge rules -> text",
     lambda t: prepend_include(t / "src/xshard/rules/projection.cc", "xshard/text/printer.h"),
     ["rules/projection.cc:", "forbidden edge rules -> text"]),
    ("EDGES edge that CMake does not link",
     lambda t: replace(t / "src/xshard/autoshard/CMakeLists.txt", "DEPS xs_jit", "DEPS xs_spmd"),
     ["autoshard/CMakeLists.txt: missing link edge autoshard -> ", "the graph (EDGES) lets"]),
]


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else HERE.parents[1]).resolve()
    failures = []
    with tempfile.TemporaryDirectory(prefix="layer_check_test.") as tmp:
        clean = pathlib.Path(tmp) / "clean"
        copy_sources(root, clean)
        code, out = run_check(clean)
        if code != 0:
            failures.append(f"the unchanged copy fails (exit {code}):\n{out}")
        for i, (what, plant, expected) in enumerate(CASES):
            tree = pathlib.Path(tmp) / f"case{i}"
            shutil.copytree(clean, tree)
            plant(tree)
            code, out = run_check(tree)
            lines = out.splitlines()
            hit = any(all(e in line for e in expected) for line in lines)
            if code != 1 or not hit:
                failures.append(f"{what}: expected exit 1 and a line with {expected}, got exit "
                                f"{code}:\n{out}")
            else:
                print(f"ok: {what}: {next(l for l in lines if all(e in l for e in expected))}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
