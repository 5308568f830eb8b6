// Iteration 6: thread-block clusters with TMA multicast. In iteration 5 every block loaded its
// own A and B tiles, so two blocks on the same tile column each read the same 64 x BN stage of
// B from L2. Here CLUSTER_M blocks of one cluster (__cluster_dims__) take CLUSTER_M tiles one
// under the other in the same column: each loads its own A tile, but only its share of the
// B tile (BN / 64 / CLUSTER_M blocks of 64 columns), with one multicast TMA
// (.multicast::cluster) that writes those bytes into the shared memory of every block of the
// cluster, at the same offset, and completes the transaction on each block's own `full[s]`.
// Each block still expects a whole stage's bytes on its `full[s]`.
//
// A stage may be refilled only when the consumers of every block in the cluster are done
// with it, since a block's multicast writes into all of them: `empty[s]` counts the consumer
// warps of the whole cluster, and each consumer warp arrives on `empty[s]` of every block
// (its address in the other block from mapa, the arrival with mbarrier.arrive.shared::cluster;
// the default release at CTA scope: a cluster-scope release would fence the block's global
// stores at every stage). A cluster barrier after the mbarrier initialization orders it before
// any remote arrival or copy. A block must not exit while another may still arrive on its
// barriers: its producer thread waits, last, until every stage has been released by the
// consumers of every block, so no warp idles at a cluster barrier at the end.
#include "hopper.cuh"
#include "specialized.cuh"

// This block's rank in its cluster (0 to CLUSTER_M - 1).
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    return rank;
}

// All threads of all blocks of the cluster: arrive (release), then wait (acquire).
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// One arrival on the mbarrier at `bar` (this block's address) in block `rank` of the cluster.
__device__ __forceinline__ void mbarrier_arrive_cluster(unsigned bar, unsigned rank) {
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n" ::"r"(bar),
        "r"(rank)
        : "memory");
}

// The box of `map` at (inner, outer) into shared memory at `dst` in every block of `mask`;
// each block's mbarrier at `bar` counts the bytes it receives.
__device__ __forceinline__ void tma_load_multicast(unsigned dst, const TensorMap *map, int inner,
                                                   int outer, unsigned bar,
                                                   unsigned short mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(inner), "r"(outer), "r"(bar),
        "h"(mask)
        : "memory");
}

// The producer's copies of one stage: its own A tile, and its share of the B tile for all.
__device__ __forceinline__ void load_cluster_stage(unsigned stage, unsigned bar,
                                                   const TensorMap *a_map,
                                                   const TensorMap *b_map, int block_row,
                                                   int block_col, int k0, unsigned rank) {
    mbarrier_expect_tx(bar, STAGE_BYTES);
    tma_load(stage, a_map, k0, block_row, bar);
#pragma unroll
    for (int j = rank; j < BN / 64; j += CLUSTER_M)
        tma_load_multicast(stage + A_STAGE_BYTES + j * B_BLOCK_BYTES, b_map, block_col + j * 64,
                           k0, bar, (1u << CLUSTER_M) - 1);
}

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1)
    gemm_bf16_cluster(int M, int N, int K, const __grid_constant__ TensorMap a_map,
                      const __grid_constant__ TensorMap b_map, float *__restrict__ C) {
    extern __shared__ unsigned char smem[];
    __shared__ alignas(8) unsigned long long full[STAGES], empty[STAGES];

    // Dynamic shared memory is not promised 1024-byte alignment: the host adds 1 KB of slack.
    // The offset is the same in every block of the cluster, as multicast needs.
    const unsigned base = (smem_address(smem) + GROUP_BYTES - 1) & ~(GROUP_BYTES - 1u);
    const int tid = threadIdx.x;
    const int warpgroup = tid / 128;
    const unsigned rank = cluster_rank();
    // A cluster's tile is CLUSTER_M block tiles, one under the other.
    const int tiles_m = M / (BM * CLUSTER_M);
    const int tiles_n = N / BN;
    const int k_tiles = K / BK;
    const int first_tile = blockIdx.x / CLUSTER_M;
    const int clusters = gridDim.x / CLUSTER_M;

    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(smem_address(&full[s]), 1);  // the producer's expect_tx arrival
            // one arrival per consumer warp of every block of the cluster
            mbarrier_init(smem_address(&empty[s]), CONSUMERS * 4 * CLUSTER_M);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    cluster_sync();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 " STRINGIFY(PRODUCER_REGISTERS) ";\n");
        if (tid == 0) {
            int step = 0;  // stages filled so far, over all of this block's tiles
            for (int tile = first_tile; tile < tiles_m * tiles_n; tile += clusters) {
                const int2 origin = tile_origin(tile, tiles_m, tiles_n, BM * CLUSTER_M);
                for (int k = 0; k < k_tiles; ++k, ++step) {
                    const int s = step % STAGES;
                    if (step >= STAGES)  // every block's consumers released its contents
                        mbarrier_wait(smem_address(&empty[s]), (step / STAGES - 1) & 1);
                    load_cluster_stage(base + s * STAGE_BYTES, smem_address(&full[s]), &a_map,
                                       &b_map, origin.x + rank * BM, origin.y, k * BK, rank);
                }
            }
            // The tail: every filled stage released by all the cluster's consumers, so no
            // other block will arrive on this block's barriers once it exits.
            for (int last = step; last < step + STAGES; ++last) {
                if (last >= STAGES)
                    mbarrier_wait(smem_address(&empty[last % STAGES]), (last / STAGES - 1) & 1);
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 " STRINGIFY(CONSUMER_REGISTERS) ";\n");
        const int consumer = warpgroup - 1;
        const bool leader = tid % 32 == 0;  // arrives on `empty` for its warp
        float acc[BN / WGMMA_N][WGMMA_N / 2];
        int step = 0;  // stages consumed so far, as the producer counts them
        for (int tile = first_tile; tile < tiles_m * tiles_n; tile += clusters) {
            const int2 origin = tile_origin(tile, tiles_m, tiles_n, BM * CLUSTER_M);
            for (int k = 0; k < k_tiles; ++k, ++step) {
                const int s = step % STAGES;
                mbarrier_wait(smem_address(&full[s]), (step / STAGES) & 1);
                wgmma_fence();
                warpgroup_stage_mma(acc, base + s * STAGE_BYTES + consumer * 64 * ROW_BYTES,
                                    base + s * STAGE_BYTES + A_STAGE_BYTES, k > 0);
                wgmma_commit();
                wgmma_wait<1>();  // the previous stage's wgmmas are done: release it
                if (k > 0 && leader) {
#pragma unroll
                    for (int r = 0; r < CLUSTER_M; ++r)
                        mbarrier_arrive_cluster(smem_address(&empty[(step - 1) % STAGES]), r);
                }
            }
            wgmma_wait<0>();
            if (leader) {
#pragma unroll
                for (int r = 0; r < CLUSTER_M; ++r)
                    mbarrier_arrive_cluster(smem_address(&empty[(step - 1) % STAGES]), r);
            }
            store_accumulators(C, N, origin.x + rank * BM + consumer * 64, origin.y, tid % 128,
                               acc);
        }
    }
}
