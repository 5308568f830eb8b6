// out[c, r] = x[r, c] for a row-major rows x cols float32 matrix.
// TILE, ROWS and PAD arrive as -D macros from the variant's params.

extern "C" __global__ void transpose_naive(const float* __restrict__ x, float* __restrict__ out,
                                           int rows, int cols) {
    int c = blockIdx.x * TILE + threadIdx.x;
    int r = blockIdx.y * TILE + threadIdx.y;
    if (r < rows && c < cols) {
        out[(size_t)c * rows + r] = x[(size_t)r * cols + c];  // reads coalesced, writes strided
    }
}

// A TILE x TILE tile through shared memory: both the read and the write walk rows. A block of
// TILE x ROWS threads covers the tile in TILE / ROWS steps; PAD = 1 shifts each tile row by one
// bank so that reading a tile column touches 32 different banks.
extern "C" __global__ void transpose_tiled(const float* __restrict__ x, float* __restrict__ out,
                                           int rows, int cols) {
    __shared__ float tile[TILE][TILE + PAD];
    int c = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS) {
        int r = r0 + k;
        if (r < rows && c < cols) tile[threadIdx.y + k][threadIdx.x] = x[(size_t)r * cols + c];
    }
    __syncthreads();
    int oc = blockIdx.y * TILE + threadIdx.x;  // a column of x is a row of out
    int or0 = blockIdx.x * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS) {
        int orow = or0 + k;
        if (orow < cols && oc < rows) out[(size_t)orow * rows + oc] = tile[threadIdx.x][threadIdx.y + k];
    }
}
