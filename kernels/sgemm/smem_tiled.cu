// Iteration 2: shared-memory cache blocking. A block stages a BLOCKxBLOCK tile of A and of B in
// shared memory, then every thread reads its row and column from there: each global element
// is loaded once per block instead of once per thread. Edge tiles are zero-filled, so any
// M, N, K works.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
sgemm_smem_tiled(int M, int N, int K, float alpha, const float *__restrict__ A,
                 const float *__restrict__ B, float beta, float *__restrict__ C) {
    __shared__ float As[BLOCK][BLOCK];
    __shared__ float Bs[BLOCK][BLOCK];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK + ty;
    const int col = blockIdx.x * BLOCK + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BLOCK) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = sgemm_out(acc, alpha, beta, &C[(size_t)row * N + col]);
}
