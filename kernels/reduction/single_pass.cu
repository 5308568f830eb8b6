// Iteration 10: a single pass, the last block finishing.
// Same loads as iteration 9, but no second launch: each block stores its partial, makes it
// visible device-wide (__threadfence) and takes a ticket from a global counter. The block
// that draws the last ticket knows every partial is written; it sums them, writes the result
// and puts the counter back to zero for the next call -- so no memset launch is needed either.
// Two tuned options below (STREAM, TILES) change how x is read; tuning.json holds the H100's
// choice per size.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
// How x is read: 0 plain loads; 1 ld.global.cs (cache-streaming: evict-first in L1 and L2);
// 2 an L2 evict-first access policy, no L1 allocation and a 256-byte L2 prefetch per miss.
#ifndef STREAM
#define STREAM 0
#endif
// Which float4s a thread reads: 0 grid-stride (load u of a step is UNROLL strides ahead);
// 1 block tiles (block b reads tiles b, b + gridDim.x, ... of UNROLL * BLOCK float4s).
#ifndef TILES
#define TILES 0
#endif

// A 16-byte load of data that is read exactly once.
__device__ __forceinline__ float4 load_once(const float4 *p, unsigned long long policy) {
#if STREAM == 1
    return __ldcs(p);
#elif STREAM == 2
    float4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(policy));
    return v;
#else
    return *p;
#endif
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// The block's sum, valid in thread 0. Safe to call twice: the barrier at the start keeps a
// second call from overwriting warp_sums while warp 0 still reads the first call's values.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warp_sums[BLOCK / 32];
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = 0.0f;
    if (warp == 0) {
        v = (lane < BLOCK / 32) ? warp_sums[lane] : 0.0f;
        v = warp_sum(v);
    }
    return v;
}

__device__ __forceinline__ float thread_sum(const float *__restrict__ in, unsigned long long n) {
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    const unsigned long long n4 = n / 4;
    const unsigned long long first = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x;
    unsigned long long policy = 0;
#if STREAM == 2
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
    float acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = 0.0f;
#if TILES
    // Each load instruction of a warp still reads 512 contiguous bytes; a block's UNROLL loads
    // cover one contiguous tile of UNROLL * BLOCK * 16 bytes.
    const unsigned long long tile = (unsigned long long)UNROLL * BLOCK;
    unsigned long long base = (unsigned long long)blockIdx.x * tile;
    for (; base + tile <= n4; base += (unsigned long long)gridDim.x * tile) {
        float4 q[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            q[u] = load_once(in4 + base + u * BLOCK + threadIdx.x, policy);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc[u] += (q[u].x + q[u].y) + (q[u].z + q[u].w);
    }
    for (unsigned long long i = base + threadIdx.x; i < n4; i += BLOCK) {  // the partial tile
        const float4 q = load_once(in4 + i, policy);
        acc[0] += (q.x + q.y) + (q.z + q.w);
    }
#else
    const unsigned long long stride = (unsigned long long)gridDim.x * BLOCK;
    unsigned long long i = first;
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 q[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) q[u] = load_once(in4 + i + u * stride, policy);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc[u] += (q[u].x + q[u].y) + (q[u].z + q[u].w);
    }
    for (; i < n4; i += stride) {
        const float4 q = load_once(in4 + i, policy);
        acc[0] += (q.x + q.y) + (q.z + q.w);
    }
#endif
    if (first < n - n4 * 4) acc[0] += in[n4 * 4 + first];
    float v = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v += acc[u];
    return v;
}

// partials: gridDim.x floats; counter: one unsigned int, zero before the first call.
extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_single_pass(const float *__restrict__ in, float *__restrict__ out,
                   float *__restrict__ partials, unsigned int *__restrict__ counter,
                   unsigned long long n) {
    __shared__ bool is_last;
    float v = block_sum(thread_sum(in, n));
    if (gridDim.x == 1) {  // a small n: one block, nothing to finish
        if (threadIdx.x == 0) out[0] = v;
        return;
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = v;
        __threadfence();  // the partial is visible to every block before the ticket is taken
        is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence();  // pairs with the writers' fences: read the partials after the ticket
    v = 0.0f;
    // __ldcg reads through L2 only, never a line this SM's L1 may still hold.
    for (unsigned int b = threadIdx.x; b < gridDim.x; b += BLOCK) v += __ldcg(&partials[b]);
    v = block_sum(v);
    if (threadIdx.x == 0) {
        out[0] = v;
        *counter = 0u;  // ready for the next launch
    }
}
