"""Large programs for the search's speed targets: a 24-layer decoder training step (~10,000
instructions), lowered without shardings.

  bench/jax_compare/.venv/bin/python bench/autoshard/big_models.py OUT_DIR
writes OUT_DIR/decoder24_train.hlo and OUT_DIR/transformer_fwd.hlo.
"""
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models  # noqa: E402

LAYERS = int(__import__("os").environ.get("LAYERS", "24"))
B, S, D, H = 16, 512, 1024, 16


def _ln(x):
    m = x.mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def _block(p, x):
    wq, wk, wv, wo, w1, w2 = p
    h = _ln(x)
    q = (h @ wq).reshape(B, S, H, D // H)
    k = (h @ wk).reshape(B, S, H, D // H)
    v = (h @ wv).reshape(B, S, H, D // H)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(D // H))
    s = jnp.where(jnp.tril(jnp.ones((S, S), bool)), s, -1e9)
    a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(B, S, D)
    x = x + a @ wo
    return x + jax.nn.gelu(_ln(x) @ w1) @ w2


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
