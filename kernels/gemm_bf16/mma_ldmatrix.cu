// Iteration 2: mma.sync.m16n8k16 (inline PTX) fed by ldmatrix from XOR-swizzled shared memory.
// Same block and warp tiles as the wmma iteration; a warp's WMxWN tile is (WM/16)x(WN/8)
// fragments of 16x8 floats held in registers. Each BK step: every thread loads its 16-byte
// pieces of the A and B tiles into registers, stores them into shared memory at swizzled
// places (no padding), and after a barrier each warp feeds its mma from ldmatrix.x4 (A) and
// ldmatrix.x4.trans (B, row-major in shared memory, the `col` operand of mma).
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm_bf16_mma(int M, int N, int K, const __nv_bfloat16 *__restrict__ A,
                  const __nv_bfloat16 *__restrict__ B, float *__restrict__ C) {
    __shared__ uint4 As[BM * BK / CHUNK];
    __shared__ uint4 Bs[BK * BN / CHUNK];

    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;
    const int warp_m = warp / (BN / WN);
    const int warp_n = warp % (BN / WN);
    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;

    float acc[WM / 16][WN / 8][4] = {};

    for (int k0 = 0; k0 < K; k0 += BK) {
        uint4 a_regs[A_CHUNKS];
        uint4 b_regs[B_CHUNKS];
#pragma unroll
        for (int c = 0; c < A_CHUNKS; ++c) {
            const int piece = tid + c * THREADS;
            const int row = piece / (BK / CHUNK);
            const int chunk = piece % (BK / CHUNK);
            a_regs[c] = *reinterpret_cast<const uint4 *>(A + (size_t)(block_row + row) * K + k0 +
                                                         chunk * CHUNK);
        }
#pragma unroll
        for (int c = 0; c < B_CHUNKS; ++c) {
            const int piece = tid + c * THREADS;
            const int row = piece / (BN / CHUNK);
            const int chunk = piece % (BN / CHUNK);
            b_regs[c] = *reinterpret_cast<const uint4 *>(B + (size_t)(k0 + row) * N + block_col +
                                                         chunk * CHUNK);
        }
#pragma unroll
        for (int c = 0; c < A_CHUNKS; ++c) {
            const int piece = tid + c * THREADS;
            As[swizzle<BK / CHUNK>(piece / (BK / CHUNK), piece % (BK / CHUNK))] = a_regs[c];
        }
#pragma unroll
        for (int c = 0; c < B_CHUNKS; ++c) {
            const int piece = tid + c * THREADS;
            Bs[swizzle<BN / CHUNK>(piece / (BN / CHUNK), piece % (BN / CHUNK))] = b_regs[c];
        }
        __syncthreads();
        warp_tile_mma(acc, As, Bs, warp_m, warp_n, lane);
        __syncthreads();
    }

    store_warp_tile(C, N, block_row + warp_m * WM, block_col + warp_n * WN, acc, lane);
}
