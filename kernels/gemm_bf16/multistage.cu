// Iteration 3: the mma.sync + ldmatrix kernel of iteration 2 with a STAGES-deep cp.async
// pipeline. Tiles move global -> shared with 16-byte cp.async.cg copies (no registers, no
// STS), into the same swizzled layout; while the warps compute tile t, the copies of tiles
// t+1 .. t+STAGES-1 are in flight. One barrier per tile: after waiting for tile t's copies,
// the barrier also tells every thread that tile t-1's stage is free for the copy of tile
// t+STAGES-1. STAGES stages of BMxBK + BKxBN bf16 exceed 48 KB for the defaults, so shared
// memory is dynamic (the host opts in).
#include "common.cuh"

#define STAGE_CHUNKS ((BM * BK + BK * BN) / CHUNK)

__device__ __forceinline__ void cp_async16(uint4 *dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_address(dst)),
                 "l"(src));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most `pending` of this thread's copy groups are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}

// Starts the copies of the tiles at k0 into one stage (As then Bs).
__device__ __forceinline__ void load_stage(uint4 *stage, const __nv_bfloat16 *__restrict__ A,
                                           const __nv_bfloat16 *__restrict__ B, int N, int K,
                                           int block_row, int block_col, int k0, int tid) {
    uint4 *As = stage;
    uint4 *Bs = stage + BM * BK / CHUNK;
#pragma unroll
    for (int c = 0; c < A_CHUNKS; ++c) {
        const int piece = tid + c * THREADS;
        const int row = piece / (BK / CHUNK);
        const int chunk = piece % (BK / CHUNK);
        cp_async16(As + swizzle<BK / CHUNK>(row, chunk),
                   A + (size_t)(block_row + row) * K + k0 + chunk * CHUNK);
    }
#pragma unroll
    for (int c = 0; c < B_CHUNKS; ++c) {
        const int piece = tid + c * THREADS;
        const int row = piece / (BN / CHUNK);
        const int chunk = piece % (BN / CHUNK);
        cp_async16(Bs + swizzle<BN / CHUNK>(row, chunk),
                   B + (size_t)(k0 + row) * N + block_col + chunk * CHUNK);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm_bf16_multistage(int M, int N, int K, const __nv_bfloat16 *__restrict__ A,
                         const __nv_bfloat16 *__restrict__ B, float *__restrict__ C) {
    extern __shared__ uint4 smem[];

    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;
    const int warp_m = warp / (BN / WN);
    const int warp_n = warp % (BN / WN);
    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;
    const int tiles = K / BK;

    float acc[WM / 16][WN / 8][4] = {};

    // Fill STAGES - 1 stages; a group is committed even when empty, so that the wait below
    // counts the same number of groups on every tile.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles)
            load_stage(smem + s * STAGE_CHUNKS, A, B, N, K, block_row, block_col, s * BK, tid);
        cp_async_commit();
    }

    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<STAGES - 2>();  // tile t has landed (for this thread's copies)
        __syncthreads();              // ... for every thread's, and tile t-1 is consumed
        const int next = t + STAGES - 1;
        if (next < tiles)
            load_stage(smem + (next % STAGES) * STAGE_CHUNKS, A, B, N, K, block_row, block_col,
                       next * BK, tid);
        cp_async_commit();
        const uint4 *stage = smem + (t % STAGES) * STAGE_CHUNKS;
        warp_tile_mma(acc, stage, stage + BM * BK / CHUNK, warp_m, warp_n, lane);
    }

    store_warp_tile(C, N, block_row + warp_m * WM, block_col + warp_n * WN, acc, lane);
}
