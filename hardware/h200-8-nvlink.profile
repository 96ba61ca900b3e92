# 8x NVIDIA H200 SXM 141 GB in one HGX H200 node, NVLink 4 through NVSwitch.
# Figures are data-sheet peaks times a stated achievable fraction (the GEMM and copy fractions
# checked against xshard's own H200 measurements in DESIGN.md section 5).
#
# Sources:
#   NVIDIA H200 data sheet, https://www.nvidia.com/en-us/data-center/h200/
#     (SXM: FP32 67 TFLOP/s, BF16 Tensor Core 1,979 TFLOP/s with sparsity = 989 dense,
#      HBM3e 4.8 TB/s, NVLink 900 GB/s per GPU = 450 GB/s each way)
#   NCCL tests, https://github.com/NVIDIA/nccl-tests (busbw = bytes each GPU receives per second)
# Assumptions:
#   - large bf16 GEMMs ~770 TFLOP/s (78 % of dense peak; PyTorch measured 770-790 at 8192^3);
#     f32 is IEEE f32 on the CUDA cores, 49.5 TFLOP/s measured (TF32 measured 336);
#   - small calls are bound by a ~5 us kernel time: 1e6 FLOP runs at 0.2 TFLOP/s;
#   - memory streams at 4.3 TB/s (90 % of 4.8; a device copy measured 4.3);
#   - NCCL within one NVSwitch node as on H100 (same NVLink 4): ~360 GB/s busbw for all-reduce,
#     all-gather, reduce-scatter, ~300 GB/s all-to-all and send/recv; ~10-15 us latency.
name = 8x H200 SXM 141GB, NVLink 4 + NVSwitch (HGX H200)
source = NVIDIA H200 data sheet https://www.nvidia.com/en-us/data-center/h200/ and NCCL-typical busbw (https://github.com/NVIDIA/nccl-tests); peaks x stated fractions, see comments
shared_host = false
devices = 8
memory_gbps = 4300
step_overhead_us = 10
op_overhead_us = 4
gemm bf16 1e6 = 200
gemm bf16 1e8 = 15000
gemm bf16 1e9 = 120000
gemm bf16 1e10 = 470000
gemm bf16 1e11 = 680000
gemm bf16 1e12 = 770000
gemm f32 1e6 = 200
gemm f32 1e8 = 8000
gemm f32 1e9 = 25000
gemm f32 1e10 = 42000
gemm f32 1e11 = 49500
collective all-gather 2 = 10 us, 360 GB/s
collective all-gather 8 = 15 us, 360 GB/s
collective all-reduce 2 = 10 us, 360 GB/s
collective all-reduce 8 = 15 us, 360 GB/s
collective reduce-scatter 2 = 10 us, 360 GB/s
collective reduce-scatter 8 = 15 us, 360 GB/s
collective all-to-all 2 = 10 us, 300 GB/s
collective all-to-all 8 = 15 us, 300 GB/s
collective collective-permute 2 = 10 us, 300 GB/s
collective collective-permute 8 = 12 us, 300 GB/s
