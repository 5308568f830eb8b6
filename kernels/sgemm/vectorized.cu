// Iteration 5: vectorized memory access. Global tiles are read with 128-bit loads (float4, when
// the host's VEC flag says rows are 16-byte aligned; scalar zero-filled loads otherwise). A is
// stored transposed in shared memory (As[k][m]) so that a thread's TM values of A for one k are
// contiguous and, like its TN values of B, come in with 128-bit shared loads (LDS.128).
#include "common.cuh"

#define THREADS ((BM / TM) * (BN / TN))
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_vectorized(int M, int N, int K, float alpha, const float *__restrict__ A,
                 const float *__restrict__ B, float beta, float *__restrict__ C) {
    __shared__ __align__(16) float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tr = tid / (BN / TN) * TM;
    const int tc = tid % (BN / TN) * TN;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float a_frag[TM], b_frag[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = tid + l * THREADS;
            const int r = idx / (BK / 4), c = idx % (BK / 4) * 4;
            const int grow = row0 + r, gk = k0 + c;
            const float4 v = grow < M ? load_row4(A + (size_t)grow * K + gk, gk, K)
                                      : make_float4(0.f, 0.f, 0.f, 0.f);
            // The transposing store: 4 scalar STS, and a warp's stores collide on banks.
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
            for (int i = 0; i < TM; i += 4)
                *reinterpret_cast<float4 *>(&a_frag[i]) = *reinterpret_cast<const float4 *>(&As[k][tr + i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4 *>(&b_frag[j]) = *reinterpret_cast<const float4 *>(&Bs[k][tc + j]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            store_row4(C, M, N, row0 + tr + i, col0 + tc + j, &acc[i][j], alpha, beta);
}
