// Iteration 1: interleaved addressing with divergent branching.
// Each block loads one element per thread into shared memory and folds pairs that are s, 2s,
// 4s, ... apart. Only threads whose index is a multiple of 2s work at each step, and they are
// scattered over every warp: all warps stay busy issuing a branch that most of their lanes skip.
// The block size is a runtime value (blockDim.x) and the tree is a loop. One launch per pass;
// the host repeats passes until one value is left.

extern "C" __global__ void reduce_interleaved_divergent(const float *__restrict__ in,
                                                        float *__restrict__ out,
                                                        unsigned long long n) {
    extern __shared__ float sdata[];
    const unsigned int tid = threadIdx.x;
    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + tid;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];  // the divergent branch
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
