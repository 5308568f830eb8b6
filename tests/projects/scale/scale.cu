#include "scale_common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
scale_kernel(int n, float s, const float *__restrict__ x, float *__restrict__ out) {
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) out[i] = scaled(s, x[i]);
}
