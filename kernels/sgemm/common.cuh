// Helpers shared by the SGEMM iterations: C = alpha * A @ B + beta * C, row-major float32,
// A is MxK, B is KxN, C is MxN. Every tile parameter arrives as a -D macro from the host
// (sgemm_project.py), which also picks VEC: 1 only when K % 4 == 0 and N % 4 == 0, so that
// every row of A and B (and of C) starts 16-byte aligned and float4 accesses are legal.
#pragma once

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

#ifndef VEC
#define VEC 0
#endif

// beta == 0 must not read C: the output may hold garbage (the tests poison it with NaN) and
// 0 * NaN is NaN.
__device__ __forceinline__ float sgemm_out(float acc, float alpha, float beta, const float *c) {
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

// Writes four consecutive outputs of one row, bounds-checked; one 128-bit access when legal.
__device__ __forceinline__ void store_row4(float *__restrict__ C, int M, int N, int row, int col,
                                           const float *v, float alpha, float beta) {
    if (row >= M) return;
    float *c = C + (size_t)row * N + col;
#if VEC
    if (col + 3 < N) {
        float4 out;
        if (beta == 0.0f) {
            out = make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3]);
        } else {
            const float4 old = *reinterpret_cast<const float4 *>(c);
            out = make_float4(alpha * v[0] + beta * old.x, alpha * v[1] + beta * old.y,
                              alpha * v[2] + beta * old.z, alpha * v[3] + beta * old.w);
        }
        *reinterpret_cast<float4 *>(c) = out;
        return;
    }
#endif
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (col + j < N) c[j] = sgemm_out(v[j], alpha, beta, c + j);
    }
}

// Grouped block order (Triton's "super-grouping"): GROUP consecutive block rows walk the block
// columns together, so the B panels they share are still in L2 when the next row needs them.
__device__ __forceinline__ void block_tile_index(int M, int N, int bm_size, int bn_size,
                                                 int group, int &bm, int &bn) {
    const int tiles_m = CEIL_DIV(M, bm_size);
    const int tiles_n = CEIL_DIV(N, bn_size);
    const int pid = blockIdx.x;
    const int per_group = group * tiles_n;
    const int first_m = (pid / per_group) * group;
    const int group_rows = min(tiles_m - first_m, group);
    bm = first_m + (pid % per_group) % group_rows;
    bn = (pid % per_group) / group_rows;
}

// Loads 4 consecutive floats of one row starting at column `col` (< `limit` elements valid),
// zero-filling past the edge; one LDG.128 when VEC says the address is aligned.
__device__ __forceinline__ float4 load_row4(const float *__restrict__ p, int col, int limit) {
#if VEC
    if (col < limit) return __ldg(reinterpret_cast<const float4 *>(p));
    return make_float4(0.f, 0.f, 0.f, 0.f);
#else
    float4 r;
    r.x = col + 0 < limit ? __ldg(p + 0) : 0.f;
    r.y = col + 1 < limit ? __ldg(p + 1) : 0.f;
    r.z = col + 2 < limit ? __ldg(p + 2) : 0.f;
    r.w = col + 3 < limit ? __ldg(p + 3) : 0.f;
    return r;
#endif
}
