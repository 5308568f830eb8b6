// Row-wise softmax of a rows x cols float32 matrix: three kernels in one file. Each kernel is
// sized by its own variant's parameters (BLOCK, WARPS); ncuh defines the other variants'
// parameters at their defaults too, so every variant compiles this whole file.

// One block per row: the row's maximum, then the sum of exponentials, each reduced through
// shared memory; three passes over the row.
extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_naive(int rows, int cols, const float *__restrict__ x, float *__restrict__ out) {
    __shared__ float partial[BLOCK];
    const float *in = x + (size_t)blockIdx.x * cols;
    float *row_out = out + (size_t)blockIdx.x * cols;
    float largest = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += BLOCK) largest = fmaxf(largest, in[c]);
    partial[threadIdx.x] = largest;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + half]);
        __syncthreads();
    }
    largest = partial[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) sum += __expf(in[c] - largest);
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    const float scale = 1.0f / partial[0];
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        row_out[c] = __expf(in[c] - largest) * scale;
}

__device__ __forceinline__ float warp_max(float value) {
    for (int offset = 16; offset > 0; offset /= 2)
        value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
    return value;
}

__device__ __forceinline__ float warp_sum(float value) {
    for (int offset = 16; offset > 0; offset /= 2)
        value += __shfl_xor_sync(0xffffffffu, value, offset);
    return value;
}

// One warp per row, WARPS rows per block: shuffles instead of shared memory and barriers.
extern "C" __global__ void __launch_bounds__(WARPS * 32)
softmax_warp(int rows, int cols, const float *__restrict__ x, float *__restrict__ out) {
    const int row = blockIdx.x * WARPS + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float *in = x + (size_t)row * cols;
    float *row_out = out + (size_t)row * cols;
    float largest = -INFINITY;
    for (int c = lane; c < cols; c += 32) largest = fmaxf(largest, in[c]);
    largest = warp_max(largest);
    float sum = 0.0f;
    for (int c = lane; c < cols; c += 32) sum += __expf(in[c] - largest);
    const float scale = 1.0f / warp_sum(sum);
    for (int c = lane; c < cols; c += 32) row_out[c] = __expf(in[c] - largest) * scale;
}

// One warp per row, the maximum and the sum in one pass (the online softmax): each lane
// rescales its running sum whenever its maximum grows; two passes over the row.
extern "C" __global__ void __launch_bounds__(WARPS * 32)
softmax_online(int rows, int cols, const float *__restrict__ x, float *__restrict__ out) {
    const int row = blockIdx.x * WARPS + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float *in = x + (size_t)row * cols;
    float *row_out = out + (size_t)row * cols;
    float largest = -INFINITY, sum = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        const float value = in[c];
        if (value > largest) {
            sum *= __expf(largest - value);
            largest = value;
        }
        sum += __expf(value - largest);
    }
    const float row_max = warp_max(largest);
    sum = largest == -INFINITY ? 0.0f : sum * __expf(largest - row_max);
    const float scale = 1.0f / warp_sum(sum);
    for (int c = lane; c < cols; c += 32) row_out[c] = __expf(in[c] - row_max) * scale;
}
