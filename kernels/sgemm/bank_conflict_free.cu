// Iteration 6: no shared-memory bank conflicts. Two changes to the vectorized kernel:
// 1. The transposed A tile gets 4 floats of padding per k-row (stride BM + 4), and the global
//    load order walks 8-wide chunks of k, so a warp's 4 scalar transposing stores land in 32
//    distinct banks instead of piling onto a few.
// 2. A thread's TMxTN outputs are split into 4x4 sub-tiles spaced (BM/TM)*4 rows and
//    (BN/TN)*4 columns apart, so the 128-bit fragment loads of a warp read one contiguous
//    stretch of shared memory (no conflict) instead of 32-byte strides (2-way conflict).
#include "common.cuh"

#define THREADS ((BM / TM) * (BN / TN))
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)
#define AS_STRIDE (BM + 4)

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_bank_conflict_free(int M, int N, int K, float alpha, const float *__restrict__ A,
                         const float *__restrict__ B, float beta, float *__restrict__ C) {
    __shared__ __align__(16) float As[BK][AS_STRIDE];
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int ty = tid / (BN / TN), tx = tid % (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float a_frag[TM], b_frag[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            // idx -> (8-wide k chunk, row, half of the chunk): a warp covers 16 rows x 8 k.
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
                    *reinterpret_cast<const float4 *>(&As[k][ty * 4 + i * (BM / TM) * 4]);
#pragma unroll
            for (int j = 0; j < TN / 4; ++j)
                *reinterpret_cast<float4 *>(&b_frag[j * 4]) =
                    *reinterpret_cast<const float4 *>(&Bs[k][tx * 4 + j * (BN / TN) * 4]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + ty * 4 + (i / 4) * (BM / TM) * 4 + i % 4;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            store_row4(C, M, N, row, col0 + tx * 4 + j * (BN / TN) * 4, &acc[i][j * 4], alpha, beta);
    }
}
