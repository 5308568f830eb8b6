// Iteration 4: 2D register tiling (seed 000). Each thread computes a TMxTN tile of C: per k it
// loads TM values of A and TN values of B from shared memory into registers and does TM*TN
// FMAs, so shared-memory traffic per FMA drops from ~1 to (TM + TN) / (TM * TN).
#include "common.cuh"

#define THREADS ((BM / TM) * (BN / TN))

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_register_tiled(int M, int N, int K, float alpha, const float *__restrict__ A,
                     const float *__restrict__ B, float beta, float *__restrict__ C) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tr = tid / (BN / TN) * TM;   // first row of this thread's tile
    const int tc = tid % (BN / TN) * TN;   // first column
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float a_frag[TM], b_frag[TN];
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
#pragma unroll
            for (int i = 0; i < TM; ++i) a_frag[i] = As[tr + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b_frag[j] = Bs[k][tc + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + tr + i;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = col0 + tc + j;
            if (col < N) C[(size_t)row * N + col] = sgemm_out(acc[i][j], alpha, beta, &C[(size_t)row * N + col]);
        }
    }
}
