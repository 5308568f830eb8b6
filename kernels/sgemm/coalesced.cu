// Iteration 1: the same arithmetic as naive, but threadIdx.x now walks along a row of C.
// A warp's 32 threads read one broadcast element of A and 32 consecutive floats of B, and
// store 32 consecutive floats of C: every global access is coalesced.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
sgemm_coalesced(int M, int N, int K, float alpha, const float *__restrict__ A,
                const float *__restrict__ B, float beta, float *__restrict__ C) {
    const int row = blockIdx.y * BLOCK + threadIdx.y;
    const int col = blockIdx.x * BLOCK + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = sgemm_out(acc, alpha, beta, &C[(size_t)row * N + col]);
}
