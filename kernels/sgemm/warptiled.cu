// Iteration 7: warp tiling. The block tile (BMxBN) is split into warp tiles (WMxWN); inside a
// warp, threads form a (WM/TM) x (WN/TN) grid and each thread's TMxTN outputs are 4x4
// sub-tiles spaced a quarter-warp-tile apart. A warp's fragment loads then touch only
// WM + WN floats per k (broadcast inside the warp), its stores to C are full 128-byte lines,
// and blocks are issued in grouped order (GROUP block rows at a time) so neighbours share L2.
#include "common.cuh"

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define TR (WM / TM)  // thread rows inside a warp
#define TC (WN / TN)  // thread columns inside a warp
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)
#define AS_STRIDE (BM + 4)

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_warptiled(int M, int N, int K, float alpha, const float *__restrict__ A,
                const float *__restrict__ B, float beta, float *__restrict__ C) {
    __shared__ __align__(16) float As[BK][AS_STRIDE];
    __shared__ __align__(16) float Bs[BK][BN];
    int bm, bn;
    block_tile_index(M, N, BM, BN, GROUP, bm, bn);
    const int row0 = bm * BM, col0 = bn * BN;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int a_off = (warp / (BN / WN)) * WM + (lane / TC) * 4;  // first row of the thread
    const int b_off = (warp % (BN / WN)) * WN + (lane % TC) * 4;  // first column
    float acc[TM][TN] = {{0.0f}};
    float a_frag[TM], b_frag[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            const int c = (idx / (2 * BM)) * 8 + (idx % 2) * 4;
            const int r = (idx / 2) % BM;
            const int grow = row0 + r, gk = k0 + c;
            const float4 v = grow < M ? load_row4(A + (size_t)grow * K + gk, gk, K)
                                      : make_float4(0.f, 0.f, 0.f, 0.f);
            As[c + 0][r] = v.x;
            As[c + 1][r] = v.y;
            As[c + 2][r] = v.z;
            As[c + 3][r] = v.w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            const int r = idx / (BN / 4), c = idx % (BN / 4) * 4;
            const int gk = k0 + r, gcol = col0 + c;
            *reinterpret_cast<float4 *>(&Bs[r][c]) =
                gk < K ? load_row4(B + (size_t)gk * N + gcol, gcol, N) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM / 4; ++i)
                *reinterpret_cast<float4 *>(&a_frag[i * 4]) =
                    *reinterpret_cast<const float4 *>(&As[k][a_off + i * TR * 4]);
#pragma unroll
            for (int j = 0; j < TN / 4; ++j)
                *reinterpret_cast<float4 *>(&b_frag[j * 4]) =
                    *reinterpret_cast<const float4 *>(&Bs[k][b_off + j * TC * 4]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + a_off + (i / 4) * TR * 4 + i % 4;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            store_row4(C, M, N, row, col0 + b_off + j * TC * 4, &acc[i][j * 4], alpha, beta);
    }
}
