// Iteration 7: several elements per thread (grid-stride loop).
// The grid is no longer sized to the data: a fixed number of blocks (a few per SM) walks the
// whole array, each thread adding two elements per step into a register before the tree.
// The shared-memory tree, its barriers and the partial store now happen once per block
// instead of once per 2*BLOCK elements, and the second pass only sums a few hundred partials.

#ifndef BLOCK
#define BLOCK 256
#endif

__device__ __forceinline__ void warp_reduce(volatile float *sdata, unsigned int tid) {
    float v = sdata[tid];
    if (BLOCK >= 64) { v += sdata[tid + 32]; __syncwarp(); sdata[tid] = v; __syncwarp(); }
    v += sdata[tid + 16]; __syncwarp(); sdata[tid] = v; __syncwarp();
    v += sdata[tid + 8];  __syncwarp(); sdata[tid] = v; __syncwarp();
    v += sdata[tid + 4];  __syncwarp(); sdata[tid] = v; __syncwarp();
    v += sdata[tid + 2];  __syncwarp(); sdata[tid] = v; __syncwarp();
    v += sdata[tid + 1];  __syncwarp(); sdata[tid] = v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_grid_stride(const float *__restrict__ in, float *__restrict__ out,
                   unsigned long long n) {
    __shared__ float sdata[BLOCK];
    const unsigned int tid = threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * (2 * BLOCK);
    float v = 0.0f;
    for (unsigned long long i = (unsigned long long)blockIdx.x * (2 * BLOCK) + tid; i < n;
         i += stride) {
        v += in[i];
        if (i + BLOCK < n) v += in[i + BLOCK];
    }
    sdata[tid] = v;
    __syncthreads();
    if (BLOCK >= 1024) { if (tid < 512) sdata[tid] = v = v + sdata[tid + 512]; __syncthreads(); }
    if (BLOCK >= 512)  { if (tid < 256) sdata[tid] = v = v + sdata[tid + 256]; __syncthreads(); }
    if (BLOCK >= 256)  { if (tid < 128) sdata[tid] = v = v + sdata[tid + 128]; __syncthreads(); }
    if (BLOCK >= 128)  { if (tid < 64)  sdata[tid] = v = v + sdata[tid + 64];  __syncthreads(); }
    if (tid < 32) warp_reduce(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
