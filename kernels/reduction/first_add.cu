// Iteration 4: first add during the global load.
// Each block now covers 2 * blockDim.x elements: every thread loads two (blockDim.x apart, so
// both loads stay coalesced) and adds them before touching shared memory. Half as many blocks,
// and no thread is idle in the first step of the tree.

extern "C" __global__ void reduce_first_add(const float *__restrict__ in,
                                            float *__restrict__ out, unsigned long long n) {
    extern __shared__ float sdata[];
    const unsigned int tid = threadIdx.x;
    const unsigned long long i = (unsigned long long)blockIdx.x * (2 * blockDim.x) + tid;
    float v = (i < n) ? in[i] : 0.0f;
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
