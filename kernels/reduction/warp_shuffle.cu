// Iteration 8: warp-shuffle reduction.
// Inside a warp, __shfl_down_sync moves a value from lane to lane through registers: five
// shuffles sum 32 values with no shared memory and no barrier. Shared memory is left with
// one float per warp, and one __syncthreads() per block instead of log2(BLOCK).

#ifndef BLOCK
#define BLOCK 256
#endif

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;  // lane 0 holds the warp's sum
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_warp_shuffle(const float *__restrict__ in, float *__restrict__ out,
                    unsigned long long n) {
    __shared__ float warp_sums[BLOCK / 32];
    const unsigned int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const unsigned long long stride = (unsigned long long)gridDim.x * (2 * BLOCK);
    float v = 0.0f;
    for (unsigned long long i = (unsigned long long)blockIdx.x * (2 * BLOCK) + tid; i < n;
         i += stride) {
        v += in[i];
        if (i + BLOCK < n) v += in[i + BLOCK];
    }
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < BLOCK / 32) ? warp_sums[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) out[blockIdx.x] = v;
    }
}
