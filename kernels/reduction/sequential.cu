// Iteration 3: sequential addressing.
// Thread t adds element t + s into element t, with s halving from blockDim.x/2: a warp reads
// 32 consecutive floats (no bank conflicts) and the active threads stay contiguous. Half of
// the threads still go idle after the very first step, and they did nothing but one load.

extern "C" __global__ void reduce_sequential(const float *__restrict__ in,
                                             float *__restrict__ out, unsigned long long n) {
    extern __shared__ float sdata[];
    const unsigned int tid = threadIdx.x;
    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + tid;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
