# A Google Cloud TPU v5e-8 slice: 8 v5e chips in a 2x4 topology joined by ICI.
# Figures are data-sheet peaks times a stated achievable fraction; none were measured by xshard.
#
# Sources:
#   Cloud TPU v5e system architecture, https://cloud.google.com/tpu/docs/v5e
#     (per chip: 197 TFLOP/s bf16, 394 TOPS int8, 16 GiB HBM2 at 819 GB/s,
#      inter-chip interconnect 1,600 Gbps = 200 GB/s per chip, both directions, all links)
#   How to think about TPUs (collective costs on ICI),
#     https://jax-ml.github.io/scaling-book/tpus/
# Assumptions:
#   - large bf16 matmuls reach 80 % of 197 TFLOP/s; small ones are bound by a ~3 us op time;
#   - f32 rows are precision=HIGHEST (six bf16 passes: 1/6 of the bf16 rate). Under JAX's
#     default precision an f32 dot on TPU runs as one bf16 pass: read the bf16 rows instead;
#   - memory streams at 90 % of 819 GB/s;
#   - ICI: each chip receives at most ~100 GB/s (half of 200 GB/s bidirectional); a collective
#     over all 8 chips of the 2x4 slice uses both axes' links at ~50 % (~50 GB/s received per
#     chip); groups of 2 and 4 lie along one axis and use its links (~25 and ~45 GB/s);
#     all-to-all and permutes along one ring ~25 GB/s; latency ~5 us (2) to ~10 us (8).
name = TPU v5e-8 (8 chips, 2x4, ICI)
source = Cloud TPU v5e docs https://cloud.google.com/tpu/docs/v5e and https://jax-ml.github.io/scaling-book/tpus/; peaks x stated fractions, see comments
shared_host = false
devices = 8
memory_gbps = 737
step_overhead_us = 5
op_overhead_us = 2
gemm bf16 1e6 = 330
gemm bf16 1e8 = 25000
gemm bf16 1e9 = 100000
gemm bf16 1e10 = 150000
gemm bf16 1e11 = 158000
gemm f32 1e6 = 330
gemm f32 1e8 = 12000
gemm f32 1e9 = 22000
gemm f32 1e10 = 26000
gemm f32 1e11 = 26300
collective all-gather 2 = 5 us, 25 GB/s
collective all-gather 4 = 7 us, 45 GB/s
collective all-gather 8 = 10 us, 50 GB/s
collective all-reduce 2 = 5 us, 25 GB/s
collective all-reduce 4 = 7 us, 45 GB/s
collective all-reduce 8 = 10 us, 50 GB/s
collective reduce-scatter 2 = 5 us, 25 GB/s
collective reduce-scatter 4 = 7 us, 45 GB/s
collective reduce-scatter 8 = 10 us, 50 GB/s
collective all-to-all 2 = 5 us, 25 GB/s
collective all-to-all 8 = 10 us, 25 GB/s
collective collective-permute 2 = 5 us, 25 GB/s
collective collective-permute 8 = 6 us, 25 GB/s
