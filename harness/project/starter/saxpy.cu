// out = a*x + y in float32. BLOCK (and BLOCKS_PER_SM) come from the project's params as -D.
//
// Several kernels may share one file, each sized by its own variant's params: ncuh compiles
// the file once per variant with that variant's params as -D, the other variants' params at
// their defaults, and -DNCUH_VARIANT_<name> -DNCUH_KERNEL_<kernel> (so `#ifdef
// NCUH_KERNEL_saxpy_vec4` can leave the other kernels out). `ncuh check` compiles every
// variant with NVRTC on any machine, GPU or not, and names what a kernel lacks.

// Iteration 0: one thread per element, 4-byte loads and stores.
extern "C" __global__ void __launch_bounds__(BLOCK)
saxpy_naive(int n, float a, const float *__restrict__ x, const float *__restrict__ y,
            float *__restrict__ out) {
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}

// Iteration 1: a grid sized to the GPU walks the array, 16 bytes per access (LDG.E.128).
// CuPy's allocations are 256-byte aligned, so the float4 view of each array is legal; the
// last n % 4 elements are done one by one.
extern "C" __global__ void __launch_bounds__(BLOCK)
saxpy_vec4(int n, float a, const float *__restrict__ x, const float *__restrict__ y,
           float *__restrict__ out) {
    const int stride = gridDim.x * BLOCK;
    const int n4 = n / 4;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    const float4 *y4 = reinterpret_cast<const float4 *>(y);
    float4 *out4 = reinterpret_cast<float4 *>(out);
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n4; i += stride) {
        const float4 u = x4[i], v = y4[i];
        out4[i] = make_float4(a * u.x + v.x, a * u.y + v.y, a * u.z + v.z, a * u.w + v.w);
    }
    for (int i = 4 * n4 + blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride)
        out[i] = a * x[i] + y[i];
}
