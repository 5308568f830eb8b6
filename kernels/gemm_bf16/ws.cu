// Iteration 5: warp specialization. Iteration 4's thread 0 both computed and fed the pipeline:
// while it waited for a stage to empty, its warp (and with it its warpgroup's wgmmas) waited
// too. Here each warpgroup has one job:
//  - warpgroup 0, the producer, only issues TMA: one thread waits on `empty[s]` and refills
//    stage s; it gives registers back first (setmaxnreg.dec), since it holds no accumulators;
//  - warpgroups 1 to BM / 64, the consumers, only run WGMMA on 64 rows of the tile each: they
//    wait on `full[s]`, issue the stage's wgmmas and release the stage one step later
//    (wait_group 1), each warp arriving once on `empty[s]`; they take the producer's
//    registers (setmaxnreg.inc).
// The grid is persistent: one block per SM walks tiles blockIdx.x, blockIdx.x + gridDim.x, ...
// in groups of GROUP tile rows (blocks that run together share A and B tiles in L2), and the
// stage ring runs on across tiles, so the producer loads the next tile's first stages while
// the consumers store the last one's accumulators. The first wgmma of a tile overwrites the
// accumulators (scale-d = 0): nothing zeroes them between tiles. The roles, registers and
// tile order are in specialized.cuh, shared with the next iteration.
#include "hopper.cuh"
#include "specialized.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    gemm_bf16_ws(int M, int N, int K, const __grid_constant__ TensorMap a_map,
                 const __grid_constant__ TensorMap b_map, float *__restrict__ C) {
    extern __shared__ unsigned char smem[];
    __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

    // Dynamic shared memory is not promised 1024-byte alignment: the host adds 1 KB of slack.
    const unsigned base = (smem_address(smem) + GROUP_BYTES - 1) & ~(GROUP_BYTES - 1u);
    const int tid = threadIdx.x;
    const int warpgroup = tid / 128;
    const int tiles_m = M / BM;
    const int tiles_n = N / BN;
    const int k_tiles = K / BK;

    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(smem_address(&full[s]), 1);  // the producer's expect_tx arrival
            mbarrier_init(smem_address(&empty[s]), CONSUMERS * 4);  // one per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 " STRINGIFY(PRODUCER_REGISTERS) ";\n");
        if (tid == 0) {
            int step = 0;  // stages filled so far, over all of this block's tiles
            for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
                const int2 origin = tile_origin(tile, tiles_m, tiles_n, BM);
                for (int k = 0; k < k_tiles; ++k, ++step) {
                    const int s = step % STAGES;
                    if (step >= STAGES)  // the consumers released its previous contents
                        mbarrier_wait(smem_address(&empty[s]), (step / STAGES - 1) & 1);
                    load_stage(base + s * STAGE_BYTES, smem_address(&full[s]), &a_map, &b_map,
                               origin.x, origin.y, k * BK);
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 " STRINGIFY(CONSUMER_REGISTERS) ";\n");
        const int consumer = warpgroup - 1;
        const bool leader = tid % 32 == 0;  // arrives on `empty` for its warp
        float acc[BN / WGMMA_N][WGMMA_N / 2];
        int step = 0;  // stages consumed so far, as the producer counts them
        for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
            const int2 origin = tile_origin(tile, tiles_m, tiles_n, BM);
            for (int k = 0; k < k_tiles; ++k, ++step) {
                const int s = step % STAGES;
                mbarrier_wait(smem_address(&full[s]), (step / STAGES) & 1);
                wgmma_fence();
                warpgroup_stage_mma(acc, base + s * STAGE_BYTES + consumer * 64 * ROW_BYTES,
                                    base + s * STAGE_BYTES + A_STAGE_BYTES, k > 0);
                wgmma_commit();
                wgmma_wait<1>();  // the previous stage's wgmmas are done: release it
                if (k > 0 && leader) mbarrier_arrive(smem_address(&empty[(step - 1) % STAGES]));
            }
            wgmma_wait<0>();
            if (leader) mbarrier_arrive(smem_address(&empty[(step - 1) % STAGES]));
            store_accumulators(C, N, origin.x + consumer * 64, origin.y, tid % 128, acc);
        }
    }
}
