// Iteration 9: asynchronous copies. Tiles move global -> shared with cp.async (inline PTX),
// STAGES deep: the copies of tiles t+1 .. t+STAGES-1 are in flight while tile t is computed,
// and they bypass the registers (no LDG -> STS round trip, no registers held for the next
// tile). A copy cannot transpose, so A now stays row-major in shared memory (As[m][k], rows
// padded to BK + 4 floats) and moves in 16-byte copies like B. A thread then reads A four k at
// a time: one LDS.128 per row gives a[m][k..k+3], the same number of LDS.128 per FMA as the
// transposed layout. Its rows are interleaved (row = base + r * TR + ty), so the TR rows a warp
// reads at once are consecutive and, with the padding, fall in distinct banks.
// Edges use cp.async's src-size operand: 0 bytes read, the destination zero-filled.
// Shared memory is dynamic (over 48 KB for the defaults), which the host opts into.
#include "common.cuh"

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define TR (WM / TM)
#define TC (WN / TN)
#define A_COPIES (BM * BK / 4 / THREADS)  // 16-byte copies of A per thread per tile
#define B_COPIES (BK * BN / 4 / THREADS)  // 16-byte copies of B per thread per tile
#define AS_STRIDE (BK + 4)
#define STAGE_FLOATS (BM * AS_STRIDE + BK * BN)
// The scalar (unaligned) path issues 4x more copies and needs more address registers: asking
// for MIN_BLOCKS blocks per SM there could spill, so it settles for one.
#if VEC
#define BLOCKS_PER_SM MIN_BLOCKS
#else
#define BLOCKS_PER_SM 1
#endif

__device__ __forceinline__ void cp_async4(float *dst, const float *src, bool valid) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src),
                 "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void cp_async16(float *dst, const float *src, bool valid) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N_PENDING>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N_PENDING));
}

// Copies 4 consecutive floats of one row (`limit` = valid columns of that row) into shared
// memory: one 16-byte copy on the aligned path, four zero-filling 4-byte copies otherwise.
// An invalid copy still needs a legal address; `base` is one.
__device__ __forceinline__ void copy_row4(float *dst, const float *base, const float *src,
                                          bool row_ok, int col, int limit) {
#if VEC
    const bool valid = row_ok && col < limit;
    cp_async16(dst, valid ? src : base, valid);
#else
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const bool valid = row_ok && col + j < limit;
        cp_async4(dst + j, valid ? src + j : base, valid);
    }
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
sgemm_async_copy(int M, int N, int K, float alpha, const float *__restrict__ A,
                 const float *__restrict__ B, float beta, float *__restrict__ C) {
    extern __shared__ __align__(16) float smem[];
    int bm, bn;
    block_tile_index(M, N, BM, BN, GROUP, bm, bn);
    const int row0 = bm * BM, col0 = bn * BN;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int a_base = (warp / (BN / WN)) * WM + lane / TC;  // + i*TR*4 + r*TR: interleaved
    const int b_off = (warp % (BN / WN)) * WN + (lane % TC) * 4;

    auto issue_tile = [&](int stage, int k0) {
        float *as = smem + stage * STAGE_FLOATS;
        float *bs = as + BM * AS_STRIDE;
#pragma unroll
        for (int l = 0; l < A_COPIES; ++l) {
            const int idx = tid + l * THREADS;
            const int r = idx / (BK / 4), c = idx % (BK / 4) * 4;
            const int grow = row0 + r, gk = k0 + c;
            copy_row4(&as[r * AS_STRIDE + c], A, A + (size_t)grow * K + gk, grow < M, gk, K);
        }
#pragma unroll
        for (int l = 0; l < B_COPIES; ++l) {
            const int idx = tid + l * THREADS;
            const int r = idx / (BN / 4), c = idx % (BN / 4) * 4;
            const int gk = k0 + r, gcol = col0 + c;
            copy_row4(&bs[r * BN + c], B, B + (size_t)gk * N + gcol, gk < K, gcol, N);
        }
    };

    float acc[TM][TN] = {{0.0f}};
    float a_frag[TM][4];     // four k of each of the thread's rows
    float b_frag[2][TN];     // one k of its columns, double-buffered

    const int tiles = CEIL_DIV(K, BK);
    // Prologue: STAGES-1 tiles in flight. Every thread commits a group per step, empty or not,
    // so that wait_group counts stay uniform.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) issue_tile(s, s * BK);
        cp_async_commit();
    }
    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of tile t have landed
        __syncthreads();              // everyone's have, and everyone finished tile t-1
        // The stage of tile t-1 is free again: refill it with tile t+STAGES-1.
        const int next = t + STAGES - 1;
        if (next < tiles) issue_tile(next % STAGES, next * BK);
        cp_async_commit();

        const float *as = smem + (t % STAGES) * STAGE_FLOATS;
        const float *bs = as + BM * AS_STRIDE;
        auto load_b = [&](int k, int f) {
#pragma unroll
            for (int j = 0; j < TN / 4; ++j)
                *reinterpret_cast<float4 *>(&b_frag[f][j * 4]) =
                    *reinterpret_cast<const float4 *>(&bs[k * BN + b_off + j * TC * 4]);
        };
        load_b(0, 0);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k % 4 == 0) {
#pragma unroll
                for (int m = 0; m < TM; ++m)
                    *reinterpret_cast<float4 *>(a_frag[m]) = *reinterpret_cast<const float4 *>(
                        &as[(a_base + (m / 4) * TR * 4 + (m % 4) * TR) * AS_STRIDE + k]);
            }
            if (k + 1 < BK) load_b(k + 1, (k + 1) & 1);
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int n = 0; n < TN; ++n) acc[m][n] += a_frag[m][k % 4] * b_frag[k & 1][n];
        }
    }
    cp_async_wait<0>();
#pragma unroll
    for (int m = 0; m < TM; ++m) {
        const int row = row0 + a_base + (m / 4) * TR * 4 + (m % 4) * TR;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            store_row4(C, M, N, row, col0 + b_off + j * TC * 4, &acc[m][j * 4], alpha, beta);
    }
}
