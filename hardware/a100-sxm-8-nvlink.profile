# 8x NVIDIA A100 SXM4 80 GB in one HGX / DGX A100 node, NVLink 3 through NVSwitch.
# Figures are data-sheet peaks times a stated achievable fraction; none were measured by xshard.
#
# Sources:
#   NVIDIA A100 Tensor Core GPU data sheet, https://www.nvidia.com/en-us/data-center/a100/
#     (SXM4 80GB: FP32 19.5 TFLOP/s, BF16 Tensor Core 312 TFLOP/s dense, HBM2e 2,039 GB/s,
#      NVLink 600 GB/s per GPU = 300 GB/s each way)
#   NCCL tests, https://github.com/NVIDIA/nccl-tests (busbw = bytes each GPU receives per second)
# Assumptions:
#   - large bf16 GEMMs reach 75 % of the dense peak (~234 TFLOP/s); f32 is IEEE f32 on the CUDA
#     cores at 90 % of 19.5 (TF32 would be about 8x faster);
#   - small calls are bound by a ~5 us kernel time: 1e6 FLOP runs at 0.2 TFLOP/s;
#   - memory streams at 90 % of 2,039 GB/s;
#   - NCCL within one NVSwitch node: ~230 GB/s busbw for all-reduce / all-gather /
#     reduce-scatter at 8 GPUs (77 % of one direction's 300 GB/s), ~200 GB/s all-to-all and
#     send/recv; latency ~10 us for 2 GPUs, ~16 us for 8.
name = 8x A100 SXM4 80GB, NVLink 3 + NVSwitch (HGX/DGX A100)
source = NVIDIA A100 data sheet https://www.nvidia.com/en-us/data-center/a100/ and NCCL-typical busbw (https://github.com/NVIDIA/nccl-tests); peaks x stated fractions, see comments
shared_host = false
devices = 8
memory_gbps = 1835
step_overhead_us = 10
op_overhead_us = 5
gemm bf16 1e6 = 200
gemm bf16 1e8 = 12000
gemm bf16 1e9 = 80000
gemm bf16 1e10 = 180000
gemm bf16 1e11 = 225000
gemm bf16 1e12 = 234000
gemm f32 1e6 = 200
gemm f32 1e8 = 5000
gemm f32 1e9 = 12000
gemm f32 1e10 = 16500
gemm f32 1e11 = 17500
collective all-gather 2 = 10 us, 230 GB/s
collective all-gather 8 = 16 us, 230 GB/s
collective all-reduce 2 = 10 us, 230 GB/s
collective all-reduce 8 = 16 us, 230 GB/s
collective reduce-scatter 2 = 10 us, 230 GB/s
collective reduce-scatter 8 = 16 us, 230 GB/s
collective all-to-all 2 = 10 us, 200 GB/s
collective all-to-all 8 = 16 us, 200 GB/s
collective collective-permute 2 = 10 us, 200 GB/s
collective collective-permute 8 = 12 us, 200 GB/s
