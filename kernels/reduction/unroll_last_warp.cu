// Iteration 5: unroll the last warp.
// Once s <= 32 only one warp is working, and a warp needs no __syncthreads() (a block-wide
// barrier) -- only __syncwarp(). The last six steps are written out without the loop. The
// 2007 version relied on implicit lock-step warps ("volatile" alone); since Volta's
// independent thread scheduling that is a data race, so each step reads, syncs the warp, then
// writes. Needs blockDim.x >= 64.

__device__ __forceinline__ void warp_reduce(volatile float *sdata, unsigned int tid) {
    float v = sdata[tid];
    v += sdata[tid + 32]; __syncwarp(); sdata[tid] = v; __syncwarp();
    v += sdata[tid + 16]; __syncwarp(); sdata[tid] = v; __syncwarp();
    v += sdata[tid + 8];  __syncwarp(); sdata[tid] = v; __syncwarp();
    v += sdata[tid + 4];  __syncwarp(); sdata[tid] = v; __syncwarp();
    v += sdata[tid + 2];  __syncwarp(); sdata[tid] = v; __syncwarp();
    v += sdata[tid + 1];  __syncwarp(); sdata[tid] = v;
}

extern "C" __global__ void reduce_unroll_last_warp(const float *__restrict__ in,
                                                   float *__restrict__ out,
                                                   unsigned long long n) {
    extern __shared__ float sdata[];
    const unsigned int tid = threadIdx.x;
    const unsigned long long i = (unsigned long long)blockIdx.x * (2 * blockDim.x) + tid;
    float v = (i < n) ? in[i] : 0.0f;
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) warp_reduce(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
