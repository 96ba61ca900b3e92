# 8x NVIDIA H100 SXM5 80 GB in one HGX / DGX H100 node, NVLink 4 through NVSwitch.
# Figures are data-sheet peaks times a stated achievable fraction; none were measured by xshard.
#
# Sources:
#   NVIDIA H100 Tensor Core GPU data sheet, https://www.nvidia.com/en-us/data-center/h100/
#     (SXM5: FP32 67 TFLOP/s, BF16 Tensor Core 1,979 TFLOP/s with sparsity = 989 dense,
#      HBM3 3.35 TB/s, NVLink 900 GB/s per GPU = 450 GB/s each way)
#   NCCL tests, https://github.com/NVIDIA/nccl-tests (busbw definition: busbw = bytes each GPU
#     receives per second under the ring model, which is what this file's GB/s means)
# Assumptions:
#   - large GEMMs reach 75 % of the dense peak (bf16 ~740 TFLOP/s; xshard's own H200 measurement,
#     DESIGN.md section 5, saw 770-790 of 989 in PyTorch at 8192^3); f32 is IEEE f32 on the CUDA
#     cores at 74 % of 67 (49.5 measured on H200); TF32 would be about 6x faster;
#   - small calls are bound by a ~5 us kernel time: 1e6 FLOP runs at 0.2 TFLOP/s;
#   - memory streams at 90 % of 3.35 TB/s;
#   - NCCL within one NVSwitch node: ~360 GB/s busbw for all-reduce / all-gather / reduce-scatter
#     at 8 GPUs (80 % of one direction's 450 GB/s), ~300 GB/s for all-to-all and send/recv;
#     latency ~10 us for 2 GPUs, ~15 us for 8 (LL protocol plus launch).
name = 8x H100 SXM5 80GB, NVLink 4 + NVSwitch (HGX/DGX H100)
source = NVIDIA H100 data sheet https://www.nvidia.com/en-us/data-center/h100/ and NCCL-typical busbw (https://github.com/NVIDIA/nccl-tests); peaks x stated fractions, see comments
shared_host = false
devices = 8
memory_gbps = 3015
step_overhead_us = 10
op_overhead_us = 4
gemm bf16 1e6 = 200
gemm bf16 1e8 = 15000
gemm bf16 1e9 = 120000
gemm bf16 1e10 = 450000
gemm bf16 1e11 = 650000
gemm bf16 1e12 = 740000
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
