// Iteration 4: WGMMA fed by TMA. A warpgroup (4 warps, 128 threads) multiplies a 64-row slice
// of the block tile with wgmma.mma_async, reading both operands straight from shared memory
// through 64-bit matrix descriptors; no ldmatrix, no fragments of A or B in registers. Tiles
// arrive by TMA (cp.async.bulk.tensor), one instruction per tile issued by one thread, laid
// out in the 128-byte swizzle that the descriptors name. A STAGES-deep ring of mbarriers
// orders the two: `full[s]` completes when stage s's bytes have landed (expect_tx), `empty[s]`
// when every warp's wgmmas on it are done, after which the same thread refills it.
//
// The copies, barriers, descriptors and wgmma itself are in hopper.cuh, shared with the
// iterations that follow.
#include "hopper.cuh"

#define THREADS (BM / 64 * 128)  // one warpgroup per 64 rows of the block tile

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm_bf16_wgmma_tma(int M, int N, int K, const __grid_constant__ TensorMap a_map,
                        const __grid_constant__ TensorMap b_map, float *__restrict__ C) {
    extern __shared__ unsigned char smem[];
    __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

    // Dynamic shared memory is not promised 1024-byte alignment: the host adds 1 KB of slack.
    const unsigned base = (smem_address(smem) + GROUP_BYTES - 1) & ~(GROUP_BYTES - 1u);
    const int tid = threadIdx.x;
    const int warpgroup = tid / 128;
    const int lane = tid % 32;
    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;
    const int tiles = K / BK;

    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(smem_address(&full[s]), 1);             // the expect_tx arrival
            mbarrier_init(smem_address(&empty[s]), THREADS / 32);  // one arrival per warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        for (int s = 0; s < STAGES && s < tiles; ++s)
            load_stage(base + s * STAGE_BYTES, smem_address(&full[s]), &a_map, &b_map, block_row,
                       block_col, s * BK);
    }
    __syncthreads();

    float acc[BN / WGMMA_N][WGMMA_N / 2] = {};

    for (int t = 0; t < tiles; ++t) {
        const int s = t % STAGES;
        mbarrier_wait(smem_address(&full[s]), (t / STAGES) & 1);
        const unsigned a = base + s * STAGE_BYTES + warpgroup * 64 * ROW_BYTES;
        const unsigned b = base + s * STAGE_BYTES + A_STAGE_BYTES;
        wgmma_fence();
        warpgroup_stage_mma(acc, a, b, true);
        wgmma_commit();
        wgmma_wait<1>();  // tile t - 1's wgmmas are done: its stage may be refilled
        if (t > 0) {
            const int freed = (t - 1) % STAGES;
            if (lane == 0) mbarrier_arrive(smem_address(&empty[freed]));
            const int next = t - 1 + STAGES;
            if (tid == 0 && next < tiles) {
                mbarrier_wait(smem_address(&empty[freed]), ((t - 1) / STAGES) & 1);
                load_stage(base + freed * STAGE_BYTES, smem_address(&full[freed]), &a_map,
                           &b_map, block_row, block_col, next * BK);
            }
            __syncwarp();
        }
    }
    wgmma_wait<0>();
    store_accumulators(C, N, block_row + warpgroup * 64, block_col, tid % 128, acc);
}
