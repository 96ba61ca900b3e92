#!/usr/bin/env python3
"""Layer check: every non-test source under src/xshard/ may include only headers of its own layer
and of the layers below it in docs/architecture.md's graph:

    base -> core -> sharding -> ir -> text -> rules -> propagation -> spmd -> passes
                                      ir -> kernels -> exec, comm -> mpi, cuda; exec + comm -> runtime
                                         runtime + mpi + cuda -> platform; runtime -> shard_map -> cmm
                                             passes + runtime -> jit
                                                        everything -> tools
    base -> testing (test binaries only)

Test files (*_test.cc, *_test_cases.inc) and fuzzers (*_fuzz.cc) may also include the layers
their folder's CMakeLists lists as TEST_DEPS (and what those use): cmake/xshard.cmake links them
into the test binary only. Prints "file:line: forbidden edge <from> -> <to>" for each violation
and exits 1; also checks that each layer's CMakeLists DEPS stay inside the same table.

Usage: layer_check.py [SOURCE_ROOT]   (default: this checkout)
"""
import pathlib
import re
import sys

# Direct edges of the graph: layer -> layers it may use directly.
EDGES = {
    "base": [],
    "testing": ["base"],
    "core": ["base"],
    "sharding": ["core"],
    "ir": ["sharding"],
    "text": ["ir"],
    "rules": ["text"],
    "propagation": ["rules"],
    "spmd": ["propagation"],
    "passes": ["spmd"],
    "kernels": ["ir"],
    "exec": ["kernels"],
    "comm": ["kernels"],
    "mpi": ["comm"],
    "cuda": ["exec", "comm"],
    "runtime": ["exec", "comm"],
    "platform": ["runtime", "mpi", "cuda"],
    "shard_map": ["runtime"],
    "cmm": ["shard_map"],
    "jit": ["passes", "runtime"],
    "autoshard": ["jit"],
    "frontend": ["jit", "shard_map"],
    "tools": ["jit", "passes", "runtime", "platform", "shard_map", "cmm", "frontend", "autoshard"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"xshard/([a-z_]+)/')
CMAKE_DEP = re.compile(r"\bxs_([a-z_]+)\b")


def allowed(layer):
    """The layer itself and everything reachable below it."""
    seen, work = {layer}, [layer]
    while work:
        for below in EDGES[work.pop()]:
            if below not in seen:
                seen.add(below)
                work.append(below)
    return seen


def is_test(path):
    name = path.name
    return name.endswith("_test.cc") or name.endswith("_fuzz.cc") or "_test_" in name


def parse_cmake(src):
    """layer -> (DEPS, TEST_DEPS) from its CMakeLists' xs_layer() call."""
    deps = {}
    for cmake in sorted(src.glob("*/CMakeLists.txt")):
        for line in cmake.read_text().splitlines():
            code = line.split("#", 1)[0].strip()
            if not code.startswith("xs_layer("):
                continue
            body = code[len("xs_layer("):code.rindex(")")]
            sections = {"DEPS": [], "TEST_DEPS": [], "EXCLUDE": []}
            current = None
            for word in body.split()[1:]:
                if word in sections:
                    current = word
                elif current is not None:
                    m = CMAKE_DEP.fullmatch(word)
                    if m:
                        sections[current].append(m.group(1))
            deps[cmake.parent.name] = (sections["DEPS"], sections["TEST_DEPS"])
    return deps


def check_sources(src, cmake_deps):
    errors = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".cc", ".h", ".inc") or not path.is_file():
            continue
        layer = path.relative_to(src).parts[0]
        if layer not in EDGES:
            errors.append(f"{path}: folder '{layer}' is not a layer of the graph (add it to "
                          "docs/architecture.md and tests/tools/layer_check.py)")
            continue
        ok = allowed(layer)
        if is_test(path):
            for dep in cmake_deps.get(layer, ([], []))[1]:
                if dep in EDGES:
                    ok = ok | allowed(dep)
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1) not in ok:
                errors.append(f"{path}:{number}: forbidden edge {layer} -> {m.group(1)} "
                              f"({layer} may use {', '.join(sorted(allowed(layer) - {layer}))})")
    return errors


def check_cmake(src, cmake_deps):
    errors = []
    for layer, (deps, _) in sorted(cmake_deps.items()):
        if layer not in EDGES:
            continue
        for dep in deps:
            if dep not in allowed(layer) - {layer}:
                errors.append(f"{src / layer / 'CMakeLists.txt'}: forbidden CMake edge {layer} -> {dep} "
                              "(DEPS; test-only dependencies go in TEST_DEPS)")
    return errors


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2])
    src = root / "src" / "xshard"
    if not src.is_dir():
        print(f"layer_check: no {src}", file=sys.stderr)
        return 2
    cmake_deps = parse_cmake(src)
    errors = check_sources(src, cmake_deps) + check_cmake(src, cmake_deps)
    for e in errors:
        print(e)
    if errors:
        print(f"layer_check: {len(errors)} forbidden edge(s); the graph is in docs/architecture.md")
        return 1
    print("layer_check: every include and CMake dependency follows the layer graph")
    return 0


if __name__ == "__main__":
    sys.exit(main())
