#!/usr/bin/env python3
"""Layer check: the layer graph of docs/architecture.md is the link graph.

    base -> core -> sharding -> ir -> rules -> propagation -> spmd
                                ir -> text -> spmd (the report prints instructions)
                                      text -> passes (the printer, for dumps)
                                ir -> kernels -> exec, comm -> mpi, cuda; exec + comm -> runtime
                                   runtime + mpi + cuda -> platform; runtime -> shard_map -> cmm
                                       spmd + passes + runtime -> jit -> autoshard
                                                  jit + shard_map -> frontend
                                                        everything -> tools
    base -> testing (test binaries only)

It fails (exit 1, one line per problem naming the file, the line and the edge) when
- a source under src/xshard/<layer>/ includes xshard/<other>/... and <other> is not <layer> or
  below it in EDGES ("forbidden edge"), or is not linked: not in <layer>'s CMake DEPS, directly
  or through theirs ("missing link edge"). Test files (*_test.cc, *_test_*.inc) and fuzzers
  (*_fuzz.cc) may also use the layers their folder's TEST_DEPS names and what those link;
- a layer's CMake DEPS (xs_layer(... DEPS ...) and target_link_libraries(xs_<layer> ...)) name a
  layer outside EDGES, or EDGES lets a layer use one that CMake does not link: the reach of
  every layer must be the same in both;
- a source of python/, bench/ or examples/ includes a layer that its CMake target does not
  link (directly or through the layers it links): the Python module's sources
  (python/CMakeLists.txt, nanobind_add_module), each benchmark (bench/CMakeLists.txt,
  xs_bench(NAME DEPS...)) and the examples (examples/CMakeLists.txt). A header there is checked
  against every target whose sources include it.

Usage: layer_check.py [SOURCE_ROOT]   (default: this checkout)
"""
import pathlib
import re
import sys

# Direct edges of the graph: layer -> layers it links directly (its CMake DEPS, up to edges
# implied by others).
EDGES = {
    "base": [],
    "testing": ["base"],
    "core": ["base"],
    "sharding": ["core"],
    "ir": ["sharding"],
    "text": ["ir"],
    "rules": ["ir"],
    "propagation": ["rules"],
    "spmd": ["propagation", "text"],
    "passes": ["text"],
    "kernels": ["ir"],
    "exec": ["kernels"],
    "comm": ["kernels"],
    "mpi": ["comm"],
    "cuda": ["exec", "comm"],
    "runtime": ["exec", "comm"],
    "platform": ["runtime", "mpi", "cuda"],
    "shard_map": ["runtime"],
    "cmm": ["shard_map"],
    "jit": ["passes", "spmd", "runtime"],
    "autoshard": ["jit"],
    "frontend": ["jit", "shard_map"],
    "tools": ["jit", "passes", "runtime", "platform", "shard_map", "cmm", "frontend", "autoshard"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"xshard/([a-z_]+)/')
LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"((?!xshard/)[^"]+\.(?:h|inc))"')
XS_LIB = re.compile(r"\bxs_([a-z_]+)\b")
SOURCE_SUFFIXES = (".cc", ".h", ".inc")


def reach(layer, edges):
    """The layer itself and everything reachable from it through `edges`."""
    seen, work = {layer}, [layer]
    while work:
        for below in edges.get(work.pop(), []):
            if below not in seen:
                seen.add(below)
                work.append(below)
    return seen


def allowed(layer):
    return reach(layer, EDGES)


def is_test(path):
    name = path.name
    return name.endswith("_test.cc") or name.endswith("_fuzz.cc") or "_test_" in name


def cmake_code(path):
    """The CMake file's text without comments."""
    return "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())


def calls(code, command):
    """The argument words of every `command(...)` call in `code`."""
    return [m.group(1).split() for m in re.finditer(r"\b" + command + r"\(([^()]*)\)", code)]


def xs_libs(words):
    return [m.group(1) for w in words for m in [XS_LIB.fullmatch(w)] if m]


def parse_cmake(src):
    """layer -> (DEPS, TEST_DEPS) from its CMakeLists: the xs_layer() call(s) and any
    target_link_libraries(xs_<layer> ...)."""
    deps = {}
    for cmake in sorted(src.glob("*/CMakeLists.txt")):
        layer = cmake.parent.name
        code = cmake_code(cmake)
        direct, test = [], []
        for args in calls(code, "xs_layer"):
            current = None
            for word in args[1:]:
                if word in ("DEPS", "TEST_DEPS", "EXCLUDE"):
                    current = word
                elif current == "DEPS":
                    direct += xs_libs([word])
                elif current == "TEST_DEPS":
                    test += xs_libs([word])
        for args in calls(code, "target_link_libraries"):
            if args and args[0] == f"xs_{layer}":
                direct += xs_libs(args[1:])
        deps[layer] = (sorted(set(direct)), sorted(set(test)))
    return deps


def link_reach(layers, cmake_deps):
    """Every layer `layers` link, themselves included, through the CMake DEPS."""
    edges = {layer: d for layer, (d, _) in cmake_deps.items()}
    out = set()
    for layer in layers:
        out |= reach(layer, edges)
    return out


def includes(path):
    """(line number, layer) of every xshard/<layer>/ include of `path`."""
    out = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            out.append((number, m.group(1)))
    return out


def check_sources(src, cmake_deps):
    errors = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        layer = path.relative_to(src).parts[0]
        if layer not in EDGES:
            errors.append(f"{path}: folder '{layer}' is not a layer of the graph (add it to "
                          "docs/architecture.md and tests/tools/layer_check.py)")
            continue
        ok = allowed(layer)
        linked = link_reach([layer], cmake_deps)
        if is_test(path):
            for dep in cmake_deps.get(layer, ([], []))[1]:
                if dep in EDGES:
                    ok = ok | allowed(dep)
                    linked = linked | link_reach([dep], cmake_deps)
        for number, used in includes(path):
            if used not in ok:
                errors.append(f"{path}:{number}: forbidden edge {layer} -> {used} "
                              f"({layer} may use {', '.join(sorted(allowed(layer) - {layer}))})")
            elif used not in linked:
                errors.append(f"{path}:{number}: missing link edge {layer} -> {used} ({used} is "
                              f"not in {layer}'s CMake DEPS, directly or through them; add xs_{used} "
                              f"to {src / layer / 'CMakeLists.txt'}"
                              f"{' TEST_DEPS' if is_test(path) else ' DEPS'})")
    return errors


def check_cmake(src, cmake_deps):
    errors = []
    for layer, (deps, _) in sorted(cmake_deps.items()):
        if layer not in EDGES:
            continue
        cmake = src / layer / "CMakeLists.txt"
        for dep in deps:
            if dep not in allowed(layer) - {layer}:
                errors.append(f"{cmake}: forbidden CMake edge {layer} -> {dep} "
                              "(DEPS; test-only dependencies go in TEST_DEPS)")
        unlinked = allowed(layer) - link_reach([layer], cmake_deps)
        if unlinked:
            errors.append(f"{cmake}: missing link edge {layer} -> {', '.join(sorted(unlinked))}: the "
                          "graph (EDGES) lets the layer use it but its CMake DEPS do not link it")
    return errors


def local_headers(path, root):
    """The project's own headers outside src/ that `path` includes (by a name relative to its
    folder or to the root, e.g. "python/src/convert.h"), and theirs."""
    seen, work = [], [path]
    while work:
        current = work.pop()
        for line in current.read_text(errors="replace").splitlines():
            m = LOCAL_INCLUDE.match(line)
            if not m:
                continue
            for header in (current.parent / m.group(1), root / m.group(1)):
                if header.is_file() and header not in seen:
                    seen.append(header)
                    work.append(header)
                    break
    return seen


def external_targets(root):
    """(folder, [(target, sources, linked xs_ layers)]) for python/, bench/ and examples/, read
    from their CMakeLists."""
    out = []
    python = root / "python" / "CMakeLists.txt"
    if python.is_file():
        code = cmake_code(python)
        targets = []
        for args in calls(code, "nanobind_add_module"):
            name = args[0]
            sources = [root / "python" / w for w in args[1:] if w.endswith(".cc")]
            libs = [lib for a in calls(code, "target_link_libraries") if a and a[0] == name
                    for lib in xs_libs(a[1:])]
            targets.append((name, sources, libs))
        out.append(("python", targets))
    bench = root / "bench" / "CMakeLists.txt"
    if bench.is_file():
        targets = []
        for args in calls(cmake_code(bench), "xs_bench"):
            if args and args[0] != "name":  # the function's own definition
                targets.append((args[0], [root / "bench" / f"{args[0]}.cc"], xs_libs(args[1:])))
        out.append(("bench", targets))
    examples = root / "examples" / "CMakeLists.txt"
    if examples.is_file():
        libs = [lib for a in calls(cmake_code(examples), "target_link_libraries")
                if a and a[0].startswith("example_") for lib in xs_libs(a[1:])]
        targets = [(f"example_{p.stem}", [p], libs) for p in sorted((root / "examples").glob("*.cc"))]
        out.append(("examples", targets))
    return out


def check_external(root, cmake_deps):
    """python/, bench/ and examples/ sources include only what their targets link."""
    errors = []
    for folder, targets in external_targets(root):
        base = root / folder
        # Every source or header of the folder: which targets build or include it.
        users = {}
        for name, sources, libs in targets:
            for s in sources:
                if not s.is_file():
                    errors.append(f"{s}: listed for {name} in {base / 'CMakeLists.txt'} but missing")
                    continue
                for f in [s] + local_headers(s, root):
                    users.setdefault(f.resolve(), []).append((name, libs))
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(base)
            if (path.suffix not in SOURCE_SUFFIXES or not path.is_file()
                    or any(part.startswith(".") for part in rel.parts)):
                continue
            used = includes(path)
            if not used:
                continue
            owners = users.get(path.resolve())
            if owners is None:
                errors.append(f"{path}: includes xshard/ headers but no target in "
                              f"{base / 'CMakeLists.txt'} builds or includes it (its links are unknown)")
                continue
            for name, libs in owners:
                unknown = [lib for lib in libs if lib not in EDGES]
                if unknown:
                    errors.append(f"{base / 'CMakeLists.txt'}: {name} links xs_{unknown[0]}, not a layer")
                linked = link_reach([lib for lib in libs if lib in EDGES], cmake_deps)
                for number, layer in used:
                    if layer not in linked:
                        errors.append(f"{path}:{number}: missing link edge {name} -> {layer} ({name} "
                                      f"links {', '.join('xs_' + lib for lib in libs) or 'no layer'}; "
                                      f"link xs_{layer} in {base / 'CMakeLists.txt'} or include less)")
    return errors


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2])
    src = root / "src" / "xshard"
    if not src.is_dir():
        print(f"layer_check: no {src}", file=sys.stderr)
        return 2
    cmake_deps = parse_cmake(src)
    errors = check_sources(src, cmake_deps) + check_cmake(src, cmake_deps) + check_external(root, cmake_deps)
    for e in errors:
        print(e)
    if errors:
        print(f"layer_check: {len(errors)} problem(s); the graph is in docs/architecture.md")
        return 1
    print("layer_check: every include and CMake dependency follows the layer graph, and every "
          "included layer is linked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
