// Iteration 2: interleaved addressing with a strided index.
// The active threads are now contiguous (thread t works on element 2*s*t), so whole warps
// retire from the tree early instead of idling lanes in every warp. The price: a warp's
// addresses are 2*s floats apart, so at s = 1 two lanes share a bank, at s = 16 all 32 do
// (shared-memory bank conflicts).

extern "C" __global__ void reduce_interleaved_strided(const float *__restrict__ in,
                                                      float *__restrict__ out,
                                                      unsigned long long n) {
    extern __shared__ float sdata[];
    const unsigned int tid = threadIdx.x;
    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + tid;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        const unsigned int index = 2 * s * tid;  // strided: bank = (2*s*tid) % 32
        if (index < blockDim.x) sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
