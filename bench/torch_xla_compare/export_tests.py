#!/usr/bin/env python3
"""Copies programs of a torch_xla_compare.py run into tests/data/torch_xla/ for the torch-free ctest.

For each named program: its torch_xla.hlo (and irtohlo.hlo / xla_propagated.hlo with --forms),
arg<i>.npy and torch_xla's outputs want<i>.npy, and an entry in manifest.json (dtype class, the
argument and output counts, the texts to run, what the program is). The expected values are
torch_xla's, as the run saved them: never xshard's.

  bench/torch_xla_compare/export_tests.py --from OUT_DIR NAME[:FORM,FORM...] ...
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEST = HERE.parent.parent / "tests" / "data" / "torch_xla"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--from", dest="src", required=True, help="the --out folder of a torch_xla_compare run")
    p.add_argument("--dest", default=str(DEST))
    p.add_argument("programs", nargs="+", help="NAME or NAME:form,form (forms: torch_xla, irtohlo, xla_propagated)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(HERE))
    src, dest = Path(args.src), Path(args.dest)
    results = {r["name"]: r for r in json.loads((src / "results.json").read_text())["results"]} \
        if (src / "results.json").exists() else {}
    manifest_path = dest / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"programs": {}}
    manifest["source"] = ("torch 2.9.0, torch_xla 2.9.0 on 8 CPU devices (PJRT_DEVICE=CPU, CPU_NUM_DEVICES=8), "
                          "by bench/torch_xla_compare/torch_xla_compare.py")
    for spec in args.programs:
        name, _, forms = spec.partition(":")
        forms = forms.split(",") if forms else ["torch_xla"]
        w = src / name
        meta = json.loads((w / "meta.json").read_text())
        d = dest / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        for f in forms:
            shutil.copy(w / f"{f}.hlo", d / f"{f}.hlo")
        for i in range(len(meta["args"])):
            shutil.copy(w / f"arg{i}.npy", d / f"arg{i}.npy")
        for i in range(len(meta["outs"])):
            shutil.copy(w / f"want{i}.npy", d / f"want{i}.npy")
        manifest["programs"][name] = {"what": results.get(name, {}).get("what", ""), "dtype": meta["dtype"],
                                      "args": len(meta["args"]), "outs": len(meta["outs"]),
                                      "forms": [f"{f}.hlo" for f in forms]}
        if meta.get("atol") is not None:
            manifest["programs"][name]["atol"] = meta["atol"]
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
