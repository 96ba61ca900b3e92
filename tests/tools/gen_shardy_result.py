#!/usr/bin/env python3
"""Writes tests/data/spmd_partition/shardy_result.hlo: a jit with in/out shardings as JAX lowers it by
default (Shardy), with its xla.sdy.FuncResultSharding result marker. Run with the JAX oracle:
  /opt/jaxref/bin/python tests/tools/gen_shardy_result.py > tests/data/spmd_partition/shardy_result.hlo"""
import os
os.environ["XLA_FLAGS"]="--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import numpy as np
mesh = Mesh(np.array(jax.devices()[:4]).reshape(2,2), ('a','b'))
s = NamedSharding(mesh, P('a', None))
f = jax.jit(lambda a,b: a@b, in_shardings=(s,s), out_shardings=s)
x = jnp.ones((4,4), jnp.float32)
print(f.lower(x,x).as_text(dialect='hlo'))
