// Iteration 3: 1D block tiling. Each thread computes TM outputs down one column of C, so one
// shared-memory read of B feeds TM FMAs (from 2 shared loads per FMA to about 1 + 1/TM).
// THREADS = BM * BN / TM; tiles of A (BMxBK) and B (BKxBN) are staged with bounds checks.
#include "common.cuh"

#define THREADS (BM * BN / TM)

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_blocktile_1d(int M, int N, int K, float alpha, const float *__restrict__ A,
                   const float *__restrict__ B, float beta, float *__restrict__ C) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tc = tid % BN;        // this thread's column inside the block tile
    const int tr = tid / BN * TM;   // its first row
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += THREADS) {
            const int r = i / BK, c = i % BK;
            As[r][c] = (row0 + r < M && k0 + c < K) ? A[(size_t)(row0 + r) * K + k0 + c] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += THREADS) {
            const int r = i / BN, c = i % BN;
            Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(size_t)(k0 + r) * N + col0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k][tc];
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] += As[tr + i][k] * b;
        }
        __syncthreads();
    }
    const int col = col0 + tc;
    if (col >= N) return;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + tr + i;
        if (row < M) C[(size_t)row * N + col] = sgemm_out(acc[i], alpha, beta, &C[(size_t)row * N + col]);
    }
}
