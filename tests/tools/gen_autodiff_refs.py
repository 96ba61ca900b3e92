"""References for src/xshard/frontend/autodiff*_test.cc, printed by JAX 0.10.2.

Run with the JAX venv (bench/jax_compare/jax_compare.py --setup makes it):
  bench/jax_compare/.venv/bin/python tests/tools/gen_autodiff_refs.py
Writes tests/data/autodiff/grad_jaxprs.txt: `make_jaxpr(grad(f))` for small functions written with
lax primitives (so the C++ test can build the same forward jaxpr equation by equation), raw as
JAX prints them; the test normalises both sides (literal types `1.0:f32[]`, `sharding=None`,
broadcast_in_dim's implied `shape`). And tests/data/autodiff/grad_values.txt: f64 gradients of
composite functions (MLP loss, softmax cross-entropy, max/avg pooling, custom_vjp) on inputs
filled with Fill(dims, seed) below, which the C++ test recomputes.
"""
import os
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_enable_x64", True)
OUT = os.path.join(os.path.dirname(__file__), "..", "data", "autodiff")


def fill(dims, seed, dtype=np.float32):
  n = int(np.prod(dims)) if dims else 1
  i = np.arange(n, dtype=np.float64)
  return np.asarray(np.sin(0.7 * i + seed) * 1.5 + 0.1 * seed, dtype=dtype).reshape(dims)


f32 = lambda *d: jnp.zeros(d, jnp.float32)
DN = (((1,), (0,)), ((), ()))
BDN = (((2,), (1,)), ((0,), (0,)))

@jax.custom_vjp
def custom_add(x, y):
  return x + y
def _custom_add_fwd(x, y):
  return x + y, None
def _custom_add_bwd(_, g):
  return 2.0 * g, 3.0 * g   # deliberately not the true derivative (seed 001's user backward)
custom_add.defvjp(_custom_add_fwd, _custom_add_bwd)



def scalar_custom(x, y):
  return lax.mul(custom_add(x, y), x)


JAXPRS = [
    # name, function, example args, argnums
    ("tanh_times_x", lambda x: lax.mul(lax.tanh(x), x), (f32(),), 0),
    ("mul_add_sum", lambda x, y: lax.reduce_sum(lax.add(lax.mul(x, y), x), (0,)),
     (f32(3), f32(3)), (0, 1)),
    ("abs", lambda x: lax.abs(x), (f32(),), 0),
    ("sub_then_mul", lambda x, y: lax.reduce_sum(lax.mul(lax.sub(x, y), x), (0,)),
     (f32(3), f32(3)), (0, 1)),
    ("div_both", lambda x, y: lax.div(x, y), (f32(), f32()), (0, 1)),
    ("max_sum", lambda x, y: lax.reduce_sum(lax.max(x, y), (0,)), (f32(3), f32(3)), 0),
    ("unary_chain", lambda x: lax.reduce_sum(
        lax.mul(lax.sqrt(x), lax.add(lax.cos(x), lax.log(x))), (0,)), (f32(4),), 0),
    ("rsqrt_logistic_sin", lambda x: lax.reduce_sum(
        lax.sub(lax.rsqrt(x), lax.mul(lax.logistic(x), lax.sin(x))), (0,)), (f32(4),), 0),
    ("integer_pow_3", lambda x: lax.reduce_sum(lax.integer_pow(x, 3), (0,)), (f32(2),), 0),
    ("pow_both", lambda x, y: lax.pow(x, y), (f32(), f32()), (0, 1)),
    ("select_n", lambda x: lax.reduce_sum(
        lax.select_n(lax.gt(x, 0.0), lax.mul(x, 2.0), x), (0,)), (f32(3),), 0),
    ("dot_general", lambda w, x: lax.reduce_sum(
        lax.dot_general(x, w, DN), (0, 1)), (f32(3, 4), f32(2, 3)), (0, 1)),
    ("dot_general_batch", lambda a, b: lax.reduce_sum(
        lax.dot_general(a, b, BDN), (0, 1, 2)), (f32(2, 3, 4), f32(2, 4, 5)), (0, 1)),
    ("broadcast_transpose_reshape", lambda x: lax.reduce_sum(
        lax.reshape(lax.transpose(lax.broadcast_in_dim(x, (2, 3, 4), (1,)), (2, 0, 1)),
                    (4, 6)), (0, 1)), (f32(3),), 0),
    ("slice_pad_concat", lambda x: lax.reduce_sum(lax.concatenate(
        [lax.slice(x, (1,), (5,), (2,)), lax.pad(x, 0.0, ((1, 2, 1),))], 0), (0,)),
     (f32(6),), 0),
    ("no_path_zeros", lambda x, y: lax.reduce_sum(x, (0,)), (f32(3), f32(3)), (0, 1)),
    ("pad", lambda x: lax.reduce_sum(lax.pad(x, 0.0, ((1, 2, 1),)), (0,)), (f32(4),), 0),
    ("slice", lambda x: lax.reduce_sum(lax.slice(x, (1,), (6,), (2,)), (0,)), (f32(7),), 0),
    ("dynamic_slices", lambda x, u: lax.reduce_sum(lax.dynamic_slice(
        lax.dynamic_update_slice(x, u, (1,)), (2,), (3,)), (0,)), (f32(6), f32(2)), (0, 1)),
    ("reduce_window_sum", lambda x: lax.reduce_sum(lax.reduce_window(
        x, 0.0, lax.add, (1, 3), (1, 2), ((0, 0), (1, 1))), (0, 1)), (f32(2, 6),), 0),
    ("reduce_window_max", lambda x: lax.reduce_sum(lax.reduce_window(
        x, -np.inf, lax.max, (1, 2), (1, 2), "VALID"), (0, 1)), (f32(2, 6),), 0),
    ("conv", lambda k, x: lax.reduce_sum(lax.conv_general_dilated(
        x, k, (1, 1), ((1, 1), (0, 0)), dimension_numbers=("NHWC", "HWIO", "NHWC")),
        (0, 1, 2, 3)), (f32(3, 2, 1, 2), f32(1, 4, 4, 1)), (0, 1)),
    ("transpose_squeeze", lambda x: lax.reduce_sum(
        lax.squeeze(lax.transpose(x, (1, 0, 2)), (0,)), (0, 1)), (f32(2, 1, 3),), 0),
    ("custom_vjp", scalar_custom, (f32(), f32()), (0, 1)),
    ("grad_grad_sigmoid", jax.grad(lambda x: lax.div(1.0, lax.add(lax.exp(lax.neg(x)), 1.0))),
     (f32(),), 0),
    ("pjit_inner", lambda x: lax.reduce_sum(jax.jit(lambda v: lax.mul(lax.sin(v), v))(x), (0,)),
     (f32(3),), 0),
]


def write_jaxprs():
  with open(os.path.join(OUT, "grad_jaxprs.txt"), "w") as f:
    f.write("# make_jaxpr(grad(f)) printed by JAX %s; written by tests/tools/gen_autodiff_refs.py\n"
            % jax.__version__)
    for name, fn, args, argnums in JAXPRS:
      with jax.enable_x64(False) if hasattr(jax, "enable_x64") else _nullctx():
        text = str(jax.make_jaxpr(jax.grad(fn, argnums=argnums))(*args))
      f.write("### %s\n%s\n" % (name, text))


class _nullctx:
  def __enter__(self): return None
  def __exit__(self, *a): return False


def mlp_loss(w1, b1, w2, x):
  h = lax.tanh(lax.add(lax.dot_general(x, w1, DN), lax.broadcast_in_dim(b1, (4, 5), (1,))))
  out = lax.dot_general(h, w2, DN)
  return lax.div(lax.reduce_sum(lax.integer_pow(out, 2), (0, 1)), 8.0)


def softmax_xent(w, x, labels):
  logits = lax.dot_general(x, w, DN)
  m = lax.reduce_max(logits, (1,))
  z = lax.sub(logits, lax.broadcast_in_dim(m, (4, 3), (0,)))
  lse = lax.log(lax.reduce_sum(lax.exp(z), (1,)))
  logp = lax.sub(z, lax.broadcast_in_dim(lse, (4, 3), (0,)))
  return lax.neg(lax.div(lax.reduce_sum(lax.mul(labels, logp), (0, 1)), 4.0))


def pool_loss(x, c):
  mx = lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
  av = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), ((0, 0), (1, 1), (1, 1), (0, 0)))
  return lax.add(lax.reduce_sum(lax.mul(mx, c), (0, 1, 2, 3)),
                 lax.reduce_sum(lax.integer_pow(av, 2), (0, 1, 2, 3)))


def conv_pool(k, x, c):
  y = lax.conv_general_dilated(x, k, (1, 1), ((1, 1), (1, 1)),
                               dimension_numbers=("NHWC", "HWIO", "NHWC"))
  y = lax.max(y, 0.0)
  p = lax.reduce_window(y, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
  return lax.reduce_sum(lax.mul(p, c), (0, 1, 2, 3))


def cnn_loss(k1, k2, w, x, labels):
  # The flax-style CNN of seed 002 in small: conv SAME, relu, avg pool, conv, relu, max pool,
  # dense, log_softmax cross-entropy; written with the front end's Tensor ops in the C++ test.
  dn = ("NHWC", "HWIO", "NHWC")
  y = lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn)
  y = jnp.maximum(y, 0.0)
  y = lax.reduce_window(y, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
  y = lax.conv_general_dilated(y, k2, (1, 1), "SAME", dimension_numbers=dn)
  y = jnp.maximum(y, 0.0)
  y = lax.reduce_window(y, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
  logits = y.reshape(2, 16) @ w
  logp = jax.nn.log_softmax(logits, axis=-1)
  return -jnp.mean(jnp.sum(labels * logp, axis=-1))


def custom_loss(x, y):
  return lax.reduce_sum(lax.mul(custom_add(x, y), x), (0,))


VALUES = [
    ("mlp", mlp_loss, [(3, 5), (5,), (5, 2), (4, 3)], (0, 1, 2)),
    ("softmax_xent", softmax_xent, [(3, 3), (4, 3), "labels"], (0, 1)),
    ("pool", pool_loss, [(1, 4, 6, 1), (1, 2, 3, 1)], (0,)),
    ("custom_vjp", custom_loss, [(3,), (3,)], (0, 1)),
    ("cnn", cnn_loss, [(3, 3, 1, 4), (3, 3, 4, 4), (16, 3), (2, 8, 8, 1), "labels2"], (0, 1, 2)),
    ("conv_pool", conv_pool, [(3, 3, 3, 4), (2, 6, 6, 3), (2, 3, 3, 4)], (0, 1)),
]


def write_values():
  with open(os.path.join(OUT, "grad_values.txt"), "w") as f:
    f.write("# f64 value and gradients from JAX %s on inputs Fill(dims, seed=argnum); "
            "written by tests/tools/gen_autodiff_refs.py\n" % jax.__version__)
    for name, fn, shapes, argnums in VALUES:
      args = []
      for k, s in enumerate(shapes):
        if s == "labels":
          args.append(np.eye(3, dtype=np.float64)[[0, 2, 1, 2]])
        elif s == "labels2":
          args.append(np.eye(3, dtype=np.float64)[[2, 0]])
        else:
          args.append(fill(s, k, np.float64))
      val, grads = jax.value_and_grad(fn, argnums=argnums)(*args)
      f.write("### %s\nvalue %r\n" % (name, float(val)))
      for a, g in zip(argnums, grads):
        g = np.asarray(g).ravel()
        f.write("grad %d %s\n" % (a, " ".join(repr(float(v)) for v in g)))


if __name__ == "__main__":
  os.makedirs(OUT, exist_ok=True)
  write_jaxprs()
  write_values()
