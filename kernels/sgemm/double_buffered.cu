// Iteration 8: double buffering. Two shared-memory stages: while the warps compute on tile t,
// each thread already holds tile t+1 in registers (its global loads were issued before the
// FMAs, so their latency hides behind them) and writes it into the other stage near the end:
// one __syncthreads per k-tile instead of two. Inside the tile, the fragments of k+1 are read
// from shared memory while the FMAs of k run (register double buffering), so LDS latency
// hides behind FMAs too. The barrier sits before the *last* k step of a tile (CUTLASS's
// order): that step's fragments are already in registers, so the next tile's first fragment
// loads overlap its FMAs instead of following the barrier with exposed latency.
// __launch_bounds__(THREADS, MIN_BLOCKS) caps registers so MIN_BLOCKS blocks fit per SM.
// Shared memory is dynamic so that large tiles may pass the 48 KB static limit (the host
// opts in).
#include "common.cuh"

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define TR (WM / TM)
#define TC (WN / TN)
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)
#define AS_STRIDE (BM + 4)

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
sgemm_double_buffered(int M, int N, int K, float alpha, const float *__restrict__ A,
                      const float *__restrict__ B, float beta, float *__restrict__ C) {
    static_assert(BK % 2 == 0, "the fragment buffers alternate: BK must be even");
    extern __shared__ __align__(16) float smem[];
    float(*As)[BK][AS_STRIDE] = reinterpret_cast<float(*)[BK][AS_STRIDE]>(smem);
    float(*Bs)[BK][BN] = reinterpret_cast<float(*)[BK][BN]>(smem + 2 * BK * AS_STRIDE);
    int bm, bn;
    block_tile_index(M, N, BM, BN, GROUP, bm, bn);
    const int row0 = bm * BM, col0 = bn * BN;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int a_off = (warp / (BN / WN)) * WM + (lane / TC) * 4;
    const int b_off = (warp % (BN / WN)) * WN + (lane % TC) * 4;

    float4 a_ld[A_LOADS], b_ld[B_LOADS];  // the next tile, in flight from global memory
#if MIN_BLOCKS == 1
    // Where each of this thread's tile loads starts at k = 0; a tile later is BK columns of A
    // and BK rows of B further on. Computed once, so each tile costs one add per load instead
    // of recomputing 64-bit addresses. The full table takes ~12 registers: under the
    // 128-register cap of two blocks per SM it spilled (16 bytes; 8% slower than B's table
    // alone on the H200), so only one block per SM (up to 255 registers) uses it whole.
    const float *a_src[A_LOADS], *b_src[B_LOADS];
    int a_col[A_LOADS], b_row[B_LOADS], b_col[B_LOADS];
    bool a_row_ok[A_LOADS];
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
        const int idx = tid + l * THREADS;
        const int grow = row0 + (idx / 2) % BM;
        a_col[l] = (idx / (2 * BM)) * 8 + (idx % 2) * 4;
        a_row_ok[l] = grow < M;
        a_src[l] = A + (size_t)min(grow, M - 1) * K + a_col[l];
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
        const int idx = tid + l * THREADS;
        b_row[l] = idx / (BN / 4);
        b_col[l] = col0 + idx % (BN / 4) * 4;
        b_src[l] = B + (size_t)b_row[l] * N + b_col[l];  // dereferenced only while row < K
    }
    auto load_tile = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l)
            a_ld[l] = a_row_ok[l] ? load_row4(a_src[l] + k0, k0 + a_col[l], K)
                                  : make_float4(0.f, 0.f, 0.f, 0.f);
        const size_t b_step = (size_t)k0 * N;
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l)
            b_ld[l] = k0 + b_row[l] < K ? load_row4(b_src[l] + b_step, b_col[l], N)
                                        : make_float4(0.f, 0.f, 0.f, 0.f);
    };
#else
    // Two blocks per SM: only B's loads get the table (its rows are N floats apart, so each
    // address needed a 64-bit multiply per tile); A's addresses are recomputed.
    const float *b_src[B_LOADS];
    int b_row[B_LOADS], b_col[B_LOADS];
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
        const int idx = tid + l * THREADS;
        b_row[l] = idx / (BN / 4);
        b_col[l] = col0 + idx % (BN / 4) * 4;
        b_src[l] = B + (size_t)b_row[l] * N + b_col[l];  // dereferenced only while row < K
    }
    auto load_tile = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            const int c = (idx / (2 * BM)) * 8 + (idx % 2) * 4;
            const int grow = row0 + (idx / 2) % BM, gk = k0 + c;
            a_ld[l] = grow < M ? load_row4(A + (size_t)grow * K + gk, gk, K)
                               : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        const size_t b_step = (size_t)k0 * N;
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l)
            b_ld[l] = k0 + b_row[l] < K ? load_row4(b_src[l] + b_step, b_col[l], N)
                                        : make_float4(0.f, 0.f, 0.f, 0.f);
    };
#endif
    auto store_tile = [&](int s) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            const int c = (idx / (2 * BM)) * 8 + (idx % 2) * 4;
            const int r = (idx / 2) % BM;
            As[s][c + 0][r] = a_ld[l].x;
            As[s][c + 1][r] = a_ld[l].y;
            As[s][c + 2][r] = a_ld[l].z;
            As[s][c + 3][r] = a_ld[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            *reinterpret_cast<float4 *>(&Bs[s][idx / (BN / 4)][idx % (BN / 4) * 4]) = b_ld[l];
        }
    };

    float acc[TM][TN] = {{0.0f}};
    float a_frag[2][TM], b_frag[2][TN];
    auto load_frag = [&](int s, int k, int f) {
#pragma unroll
        for (int i = 0; i < TM / 4; ++i)
            *reinterpret_cast<float4 *>(&a_frag[f][i * 4]) =
                *reinterpret_cast<const float4 *>(&As[s][k][a_off + i * TR * 4]);
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            *reinterpret_cast<float4 *>(&b_frag[f][j * 4]) =
                *reinterpret_cast<const float4 *>(&Bs[s][k][b_off + j * TC * 4]);
    };

    const int tiles = CEIL_DIV(K, BK);
    load_tile(0);
    store_tile(0);
    __syncthreads();
    load_frag(0, 0, 0);
    for (int t = 0; t < tiles; ++t) {
        const int s = t & 1;
        const bool more = t + 1 < tiles;
        if (more) load_tile((t + 1) * BK);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            // Stage s^1 was last read before the barrier of tile t-1 (its final fragments
            // were loaded one step ahead of that barrier): safe to overwrite now.
            if (more && k == BK - 1) store_tile(s ^ 1);
            if (k + 1 < BK) {
                load_frag(s, k + 1, (k + 1) & 1);
            } else if (more) {
                __syncthreads();  // publishes tile t+1; this step's fragments are in registers
                load_frag(s ^ 1, 0, 0);
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a_frag[k & 1][i] * b_frag[k & 1][j];
        }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + a_off + (i / 4) * TR * 4 + i % 4;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            store_row4(C, M, N, row, col0 + b_off + j * TC * 4, &acc[i][j * 4], alpha, beta);
    }
}
