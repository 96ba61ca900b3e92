"""Large programs for the search's speed targets: a 24-layer decoder training step (~10,000
instructions), lowered without shardings.

  bench/jax_compare/.venv/bin/python bench/autoshard/big_models.py OUT_DIR
  xshard autoshard OUT_DIR/decoder24_train.hlo --mesh data=8,model=8 --memory-per-device 8G
writes OUT_DIR/decoder24_train.hlo (B16 S512 D1024 H16, f32) and OUT_DIR/transformer_fwd.hlo.
"""
import os
import sys
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models  # noqa: E402

LAYERS = int(os.environ.get("LAYERS", "24"))  # LAYERS=2 for a quick one
B, S, D, H = 16, 512, 1024, 16


def _block(p, x):
    return models.decoder_block(p, x, B, S, D, H)


def _step(params, x, y):
    def loss(ps):
        h = x
        for p in ps:
            h = _block(p, h)
        return jnp.mean((h - y) ** 2)
    l, g = jax.value_and_grad(loss)(params)
    return l, jax.tree.map(lambda p, gp: p - 0.01 * gp, params, g)


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    f32 = jax.ShapeDtypeStruct
    layer = [f32((D, D), jnp.float32)] * 4 + [f32((D, 4 * D), jnp.float32), f32((4 * D, D), jnp.float32)]
    params = [tuple(layer) for _ in range(LAYERS)]
    x = f32((B, S, D), jnp.float32)
    (out / "decoder24_train.hlo").write_text(jax.jit(_step).lower(params, x, x).as_text(dialect="hlo"))
    w = models.W.all_workloads()
    t = [w_ for w_ in w if w_.name == "transformer_fwd"][0]
    (out / "transformer_fwd.hlo").write_text(jax.jit(t.fn).lower(*t.make_args()).as_text(dialect="hlo"))


if __name__ == "__main__":
    main()
