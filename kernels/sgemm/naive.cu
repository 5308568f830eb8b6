// Iteration 0: one thread per output, threadIdx.x walking down the rows of C.
// Consecutive threads of a warp read A from different rows (K floats apart), so every load of
// A is its own memory transaction: the baseline the rest of the chain improves on.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
sgemm_naive(int M, int N, int K, float alpha, const float *__restrict__ A,
            const float *__restrict__ B, float beta, float *__restrict__ C) {
    const int row = blockIdx.x * BLOCK + threadIdx.x;
    const int col = blockIdx.y * BLOCK + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = sgemm_out(acc, alpha, beta, &C[(size_t)row * N + col]);
}
