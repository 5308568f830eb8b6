// Iteration 9: 128-bit vectorized loads.
// Each thread reads float4s (one LDG.E.128 moves 16 bytes) in a grid-stride loop, UNROLL of
// them per step into UNROLL independent accumulators, so UNROLL loads are in flight per thread
// before the first add needs one. The 0..3 floats past the last whole float4 are added by the
// first threads of block 0. `in` must be 16-byte aligned (CuPy allocations are 256-byte).

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// The block's sum, valid in thread 0.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warp_sums[BLOCK / 32];
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = 0.0f;
    if (warp == 0) {
        v = (lane < BLOCK / 32) ? warp_sums[lane] : 0.0f;
        v = warp_sum(v);
    }
    return v;
}

// Sum of this thread's share of in[0, n): float4s in a grid-stride loop, then the tail.
__device__ __forceinline__ float thread_sum(const float *__restrict__ in, unsigned long long n) {
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    const unsigned long long n4 = n / 4;
    const unsigned long long stride = (unsigned long long)gridDim.x * BLOCK;
    const unsigned long long first = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x;
    float acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = 0.0f;
    unsigned long long i = first;
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 q[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) q[u] = in4[i + u * stride];  // all loads issued first
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc[u] += (q[u].x + q[u].y) + (q[u].z + q[u].w);
    }
    for (; i < n4; i += stride) {
        const float4 q = in4[i];
        acc[0] += (q.x + q.y) + (q.z + q.w);
    }
    if (first < n - n4 * 4) acc[0] += in[n4 * 4 + first];  // the 0..3 floats after the float4s
    float v = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v += acc[u];
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_vectorized(const float *__restrict__ in, float *__restrict__ out, unsigned long long n) {
    const float v = block_sum(thread_sum(in, n));
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}
