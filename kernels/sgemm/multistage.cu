// Iteration 10: multistage copies that transpose. Tiles move global -> shared with cp.async,
// STAGES deep, like iteration 9, but A is copied one float at a time (4-byte cp.async, as
// CUTLASS's SIMT kernels do) straight into its transposed place As[k][m]: the fragments stay
// k-major, so both are read with LDS.128 and double-buffered in registers as in iteration 8,
// and no registers hold the next tile. A warp's A copies cover 4 rows x 8 consecutive k: 32
// bytes of each row (one sector) and, with rows of BM + 4 floats, 32 distinct banks.
// Copies read from a table of addresses built once per block (one add per copy per tile).
// Rows past M and columns past N are read from the last valid one (they feed only outputs
// that are never stored), so the only check left is for k past K, in the last tile alone;
// when every tile is whole (EXACT, set by the host) even that branch is compiled out. Where
// rows of B are not 16-byte aligned (VEC = 0), B moves as 4-byte copies, a warp's to 32
// consecutive columns.
// SPLIT > 1 splits K over a cluster of SPLIT blocks (one output tile): each parks its partial
// sums in its shared memory, and after a cluster barrier each block adds one slice of the
// tile over all ranks through distributed shared memory (mapa + ld.shared::cluster) and
// writes it. That fills the GPU at sizes with fewer tiles than SMs, with no second launch.
// SERIAL = 1 splits K over SPLIT blocks without a cluster (so deeper than 8): each writes its
// partial tile to a global workspace and counts itself in at a per-tile counter; the last to
// arrive adds the partials in rank order (the same sum whichever block is last), writes C and
// sets the counter back to zero for the next launch.
// CONST_DST = 1 (where BM * AK is a multiple of THREADS) addresses every A copy's shared-memory
// destination as one register plus a constant, instead of a register per copy: fewer integer
// instructions per tile and fewer registers. COPY_AT_END = 1 issues the copies of the next
// free stage after the tile's last k step (just before the barrier) instead of before its
// first. Both default to 0, which compiles the kernel as it was without them.
#include "common.cuh"

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define TR (WM / TM)
#define TC (WN / TN)
#define AK 8                              // consecutive k of one row in a warp's A copies
#define A_COPIES (BM * BK / THREADS)      // 4-byte copies of A per thread per tile
#define B_COPIES (BK * BN / 4 / THREADS)  // 16-byte copies of B per thread per tile
#define AS_STRIDE (BM + 4)
#define STAGE_FLOATS (BK * AS_STRIDE + BK * BN)

#ifndef EXACT
#define EXACT 0
#endif
#ifndef SERIAL
#define SERIAL 0
#endif
#ifndef CONST_DST
#define CONST_DST 0
#endif
#ifndef COPY_AT_END
#define COPY_AT_END 0
#endif

__device__ __forceinline__ unsigned shared_address(const float *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async4(unsigned dst, const float *src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const float *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N_PENDING>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N_PENDING));
}

// Four outputs of one row of C, zeros past its edges; one 128-bit load where legal.
__device__ __forceinline__ float4 load_c4(const float *__restrict__ C, int M, int N, int row,
                                          int col) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row >= M) return v;
    const float *c = C + (size_t)row * N + col;
#if VEC
    if (col + 3 < N) return *reinterpret_cast<const float4 *>(c);
#endif
    if (col < N) v.x = c[0];
    if (col + 1 < N) v.y = c[1];
    if (col + 2 < N) v.z = c[2];
    if (col + 3 < N) v.w = c[3];
    return v;
}

// Writes four outputs of one row of C, none past its edges; one 128-bit store where legal.
__device__ __forceinline__ void store_c4(float *__restrict__ C, int M, int N, int row, int col,
                                         float4 v) {
    if (row >= M) return;
    float *c = C + (size_t)row * N + col;
#if VEC
    if (col + 3 < N) {
        *reinterpret_cast<float4 *>(c) = v;
        return;
    }
#endif
    if (col < N) c[0] = v.x;
    if (col + 1 < N) c[1] = v.y;
    if (col + 2 < N) c[2] = v.z;
    if (col + 3 < N) c[3] = v.w;
}

// Rows of the thread tile whose old C is loaded at once (at most 32 floats in registers).
#define EPI_ROWS (TM < 32 / TN ? TM : 32 / TN)

#if SPLIT > 1 && !SERIAL
#define CLUSTER_DIMS __cluster_dims__(SPLIT, 1, 1)

__device__ __forceinline__ int cluster_rank() {
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    return static_cast<int>(rank);
}

// Arrive and wait: every block of the cluster is here, and their shared-memory writes are
// visible to each other.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::);
}

// Four floats at the same shared-memory offset in block `rank` of the cluster.
__device__ __forceinline__ float4 load_rank4(const float *p, int rank) {
    const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote));
    return v;
}
#else
#define CLUSTER_DIMS
#endif

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, MIN_BLOCKS)
sgemm_multistage(int M, int N, int K, float alpha, const float *__restrict__ A,
                 const float *__restrict__ B, float beta, float *__restrict__ C,
                 // SERIAL only: SPLIT partial BM x BN tiles per output tile, and a counter
                 // per output tile (zero before the launch, zero again after it)
                 float *__restrict__ partials, unsigned *__restrict__ arrivals) {
    extern __shared__ __align__(16) float smem[];
    const int tiles_m = CEIL_DIV(M, BM), tiles_n = CEIL_DIV(N, BN);
    // Grouped block order over output tiles; the SPLIT blocks of one tile are consecutive.
    const int pid = blockIdx.x / SPLIT, per_group = GROUP * tiles_n;
    const int first_m = (pid / per_group) * GROUP;
    const int group_rows = min(tiles_m - first_m, GROUP);
    const int row0 = (first_m + (pid % per_group) % group_rows) * BM;
    const int col0 = ((pid % per_group) / group_rows) * BN;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int a_off = (warp / (BN / WN)) * WM + (lane / TC) * 4;
    const int b_off = (warp % (BN / WN)) * WN + (lane % TC) * 4;

    const int all_tiles = CEIL_DIV(K, BK);
#if SPLIT > 1
#if SERIAL
    const int rank = blockIdx.x % SPLIT;
#else
    const int rank = cluster_rank();
#endif
    const int t_begin = all_tiles * rank / SPLIT;
    const int tiles = all_tiles * (rank + 1) / SPLIT - t_begin;
#else
    const int t_begin = 0, tiles = all_tiles;
#endif

    // Copy tables, built once per block; each call of `issue` moves them on by one tile.
    // Copy l of A is row (idx / AK) % BM, k (idx / (AK * BM)) * AK + idx % AK of the tile
    // (idx = tid + l * THREADS). A row past M or a column past N is read from the last one
    // instead: it feeds only outputs that are never stored, so no copy needs a predicate
    // for the M and N edges. Only k past K must read zeros, and only the last tile reaches it.
    const unsigned smem0 = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    const float *a_src[A_COPIES];
#if CONST_DST
    // With BM * AK a multiple of THREADS, copy l lies THREADS / AK rows below copy 0, moved on
    // to the next AK values of k every BM rows: the same offset for every thread.
    static_assert(BM * AK % THREADS == 0, "CONST_DST needs BM * AK to be a multiple of THREADS");
    const unsigned a_dst0 = smem0 + 4 * ((tid % AK) * AS_STRIDE + tid / AK);
#define A_DST(l) \
    (a_dst0 + 4 * (((l) * (THREADS / AK) / BM) * AK * AS_STRIDE + (l) * (THREADS / AK) % BM))
#else
    unsigned a_dst[A_COPIES];
#define A_DST(l) a_dst[l]
#endif
#pragma unroll
    for (int l = 0; l < A_COPIES; ++l) {
        const int idx = tid + l * THREADS;
        const int r = (idx / AK) % BM, c = (idx / (AK * BM)) * AK + idx % AK;
        a_src[l] = A + (size_t)min(row0 + r, M - 1) * K + t_begin * BK + c;
#if !CONST_DST
        a_dst[l] = smem0 + 4 * (c * AS_STRIDE + r);
#endif
    }
    const unsigned b_dst0 = smem0 + 4 * BK * AS_STRIDE;
#if VEC
    // 16-byte copies; N is a multiple of 4, so a float4 is either wholly inside or past N.
    const float *b_src[B_COPIES];
#pragma unroll
    for (int l = 0; l < B_COPIES; ++l) {
        const int idx = tid + l * THREADS;
        b_src[l] = B + (size_t)(t_begin * BK + idx / (BN / 4)) * N +
                   min(col0 + idx % (BN / 4) * 4, N - 4);
    }
#else
    // Rows of B are not 16-byte aligned: 4-byte copies, a warp's 32 to consecutive columns
    // of one row (4 sectors per copy, and 32 banks). The host admits only BN % THREADS == 0
    // or THREADS % BN == 0, so copy l is at a constant offset from the thread's first one:
    // B_COLUMNS copies across a row (BN > THREADS), then B_ROWSTEP rows down.
#define B_COLUMNS (BN > THREADS ? BN / THREADS : 1)
#define B_ROWSTEP (THREADS > BN ? THREADS / BN : 1)
    const int b_r0 = tid / BN, b_c0 = tid % BN;
    const float *b_src[B_COLUMNS];
#pragma unroll
    for (int q = 0; q < B_COLUMNS; ++q)
        b_src[q] = B + (size_t)(t_begin * BK + b_r0) * N + min(col0 + b_c0 + q * THREADS, N - 1);
    const unsigned b_dst1 = b_dst0 + 4 * (b_r0 * BN + b_c0);
#endif

    // `valid`: how many k of the tile lie inside K; copies past it read nothing (src-size
    // 0) from a legal address, and A (or B) is one. Called with checked = false for every
    // tile but a partial last one, so the others compile without the checks.
    auto copy_tile = [&](unsigned off, bool checked, int valid) {
#pragma unroll
        for (int l = 0; l < A_COPIES; ++l) {
            const int idx = tid + l * THREADS;
            const bool ok = !checked || (idx / (AK * BM)) * AK + idx % AK < valid;
            cp_async4(A_DST(l) + off, ok ? a_src[l] : A, ok);
            a_src[l] += BK;
        }
#if VEC
#pragma unroll
        for (int l = 0; l < B_COPIES; ++l) {
            const int idx = tid + l * THREADS;
            const bool ok = !checked || idx / (BN / 4) < valid;
            cp_async16(b_dst0 + off + 16 * idx, ok ? b_src[l] : B, ok);
            b_src[l] += (size_t)BK * N;
        }
#else
#pragma unroll
        for (int l = 0; l < BK * BN / THREADS; ++l) {
            const int q = l % B_COLUMNS, row = l / B_COLUMNS * B_ROWSTEP;
            const bool ok = !checked || b_r0 + row < valid;
            cp_async4(b_dst1 + off + 4 * (row * BN + q * THREADS),
                      ok ? b_src[q] + (size_t)row * N : B, ok);
        }
#pragma unroll
        for (int q = 0; q < B_COLUMNS; ++q) b_src[q] += (size_t)BK * N;
#endif
    };
    auto issue = [&](int stage, int k0) {
        const unsigned off = stage * STAGE_FLOATS * 4;
        if (EXACT || k0 + BK <= K)
            copy_tile(off, false, BK);
        else
            copy_tile(off, true, K - k0);
    };

    float acc[TM][TN] = {{0.0f}};
    float a_frag[2][TM], b_frag[2][TN];
    // Fragment addresses from per-thread bases, so each load is one LDS.128 with a constant
    // offset (computing them from `smem` inside the lambda cost NVRTC ~60 extra integer
    // instructions per tile and 25 registers).
    const float *frag_a = smem + a_off;
    const float *frag_b = smem + BK * AS_STRIDE + b_off;
    auto load_frag = [&](int stage, int k, int f) {
        const float *as = frag_a + stage * STAGE_FLOATS + k * AS_STRIDE;
        const float *bs = frag_b + stage * STAGE_FLOATS + k * BN;
#pragma unroll
        for (int i = 0; i < TM / 4; ++i)
            *reinterpret_cast<float4 *>(&a_frag[f][i * 4]) =
                *reinterpret_cast<const float4 *>(as + i * TR * 4);
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            *reinterpret_cast<float4 *>(&b_frag[f][j * 4]) =
                *reinterpret_cast<const float4 *>(bs + j * TC * 4);
    };

    // Prologue: STAGES-1 tiles in flight. Every thread commits a group per step, empty or
    // not, so that the wait_group counts stay uniform.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) issue(s, (t_begin + s) * BK);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (tiles > 0) load_frag(0, 0, 0);
    int s_read = 0, s_write = STAGES - 1;
    for (int t = 0; t < tiles; ++t) {
        // The stage of tile t-1 is free: every thread passed the barrier that ended it.
        const int s_fill = s_write;
        const bool fill = t + STAGES - 1 < tiles;
#if !COPY_AT_END
        if (fill) issue(s_fill, (t_begin + t + STAGES - 1) * BK);
        cp_async_commit();
#endif
        s_write = s_write + 1 == STAGES ? 0 : s_write + 1;
        const int s_next = s_read + 1 == STAGES ? 0 : s_read + 1;
        const bool more = t + 1 < tiles;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#if COPY_AT_END
            if (k == BK - 1) {  // committed before the wait below, as a group of its own
                if (fill) issue(s_fill, (t_begin + t + STAGES - 1) * BK);
                cp_async_commit();
            }
#endif
            if (k + 1 < BK) {
                load_frag(s_read, k + 1, (k + 1) & 1);
            } else if (more) {
                cp_async_wait<STAGES - 2>();  // this thread's copies of tile t+1 have landed
                __syncthreads();              // everyone's have; tile t's fragments are read
                load_frag(s_next, 0, 0);
            }
            // Column by column, alternating the direction down the rows: consecutive FFMAs
            // share an operand (b[j] within a column, a[i] at each turn), which the compiler
            // keeps in the operand reuse cache; this order measured faster than row-major.
#pragma unroll
            for (int j = 0; j < TN; ++j)
#pragma unroll
                for (int ii = 0; ii < TM; ++ii) {
                    const int i = (j & 1) ? TM - 1 - ii : ii;
                    acc[i][j] += a_frag[k & 1][i] * b_frag[k & 1][j];
                }
        }
        s_read = s_next;
    }
    cp_async_wait<0>();
#if SERIAL
    // Thread tid's float4 f of the tile (f = i * TN / 4 + j) lies at (f * THREADS + tid) * 4
    // of its rank's partial: a warp's stores and loads are 512 contiguous bytes. They go
    // through L2 only (.cg): another SM's L1 may hold nothing of them.
    constexpr int TILE4 = BM * BN / 4;
    float4 *own = reinterpret_cast<float4 *>(partials) + ((size_t)pid * SPLIT + rank) * TILE4;
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            __stcg(own + (i * TN / 4 + j) * THREADS + tid,
                   *reinterpret_cast<const float4 *>(&acc[i][j * 4]));
    __threadfence();  // this thread's partial is visible GPU-wide before the block counts in
    __syncthreads();  // past it, no thread reads the stages: the first word holds the count
    unsigned *arrived = reinterpret_cast<unsigned *>(smem);
    if (tid == 0) *arrived = atomicAdd(&arrivals[pid], 1u);
    __syncthreads();
    if (*arrived != SPLIT - 1) return;
    // The last block in: acc becomes the sum of the partials in rank order, its own read back
    // like the others, so the result does not depend on which block came last.
    __threadfence();  // every other rank's partial is read after its count
    const float4 *tile = reinterpret_cast<const float4 *>(partials) + (size_t)pid * SPLIT * TILE4;
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    for (int q = 0; q < SPLIT; ++q) {
        const float4 *part = tile + (size_t)q * TILE4 + tid;
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN / 4; ++j) {
                const float4 v = __ldcg(part + (i * TN / 4 + j) * THREADS);
                acc[i][j * 4 + 0] += v.x;
                acc[i][j * 4 + 1] += v.y;
                acc[i][j * 4 + 2] += v.z;
                acc[i][j * 4 + 3] += v.w;
            }
    }
    if (tid == 0) arrivals[pid] = 0;  // all SPLIT blocks are in: the next launch starts at 0
#endif
#if SPLIT > 1 && !SERIAL
    // Park the partial tile row-major in this block's shared memory (the stages are done);
    // then rank r adds rows [r, r+1) * BM / SPLIT over all ranks and writes them.
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = a_off + (i / 4) * TR * 4 + i % 4;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            *reinterpret_cast<float4 *>(&smem[r * BN + b_off + j * TC * 4]) =
                *reinterpret_cast<const float4 *>(&acc[i][j * 4]);
    }
    cluster_sync();
    constexpr int SLICE4 = BM / SPLIT * BN / 4;
    for (int e = tid; e < SLICE4; e += THREADS) {
        const int r = rank * (BM / SPLIT) + e / (BN / 4), c = e % (BN / 4) * 4;
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int q = 0; q < SPLIT; ++q) {
            const float4 v = load_rank4(&smem[r * BN + c], q);
            sum.x += v.x;
            sum.y += v.y;
            sum.z += v.z;
            sum.w += v.w;
        }
        store_row4(C, M, N, row0 + r, col0 + c, &sum.x, alpha, beta);
    }
    cluster_sync();  // no block may exit while another still reads its shared memory
#else
    // EPI_ROWS rows at a time, every old value of C loaded before any output is stored: the
    // loads overlap, where a load after each store would wait out a round trip to memory
    // per four outputs. beta == 0 reads nothing (C may hold NaN).
#pragma unroll
    for (int i0 = 0; i0 < TM; i0 += EPI_ROWS) {
        float4 old[EPI_ROWS][TN / 4];
#pragma unroll
        for (int ii = 0; ii < EPI_ROWS; ++ii) {
            const int i = i0 + ii, row = row0 + a_off + (i / 4) * TR * 4 + i % 4;
#pragma unroll
            for (int j = 0; j < TN / 4; ++j)
                old[ii][j] = beta == 0.0f ? make_float4(0.f, 0.f, 0.f, 0.f)
                                          : load_c4(C, M, N, row, col0 + b_off + j * TC * 4);
        }
#pragma unroll
        for (int ii = 0; ii < EPI_ROWS; ++ii) {
            const int i = i0 + ii, row = row0 + a_off + (i / 4) * TR * 4 + i % 4;
#pragma unroll
            for (int j = 0; j < TN / 4; ++j) {
                const float *v = &acc[i][j * 4];
                const float4 c = old[ii][j];
                const float4 out =
                    beta == 0.0f
                        ? make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3])
                        : make_float4(alpha * v[0] + beta * c.x, alpha * v[1] + beta * c.y,
                                      alpha * v[2] + beta * c.z, alpha * v[3] + beta * c.w);
                store_c4(C, M, N, row, col0 + b_off + j * TC * 4, out);
            }
        }
    }
#endif
}
