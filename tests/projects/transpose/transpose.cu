// out (cols x rows) = x (rows x cols) transposed, float32, row-major. Four kernels, one per
// variant: TILE and BLOCK_ROWS size the tiled ones (a block of TILE x BLOCK_ROWS threads moves
// one TILE x TILE tile), BLOCK_X and BLOCK_Y the naive one.

extern "C" __global__ void transpose_naive(const float *__restrict__ x, float *__restrict__ out,
                                           int rows, int cols) {
    const int col = blockIdx.x * BLOCK_X + threadIdx.x;
    const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (row < rows && col < cols) out[(size_t)col * rows + row] = x[(size_t)row * cols + col];
}

// A block moves one tile: it reads TILE rows of x along them (coalesced) into shared memory,
// then writes them out as columns of out, again along rows. PAD floats at the end of each tile
// row shift a tile column across the shared-memory banks.
template <int PAD>
__device__ void transpose_through_tile(const float *__restrict__ x, float *__restrict__ out,
                                       int rows, int cols) {
    __shared__ float tile[TILE][TILE + PAD];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (row + j < rows && col < cols)
            tile[threadIdx.y + j][threadIdx.x] = x[(size_t)(row + j) * cols + col];
    __syncthreads();
    col = blockIdx.y * TILE + threadIdx.x;  // a column of out is a row of x
    row = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (row + j < cols && col < rows)
            out[(size_t)(row + j) * rows + col] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void transpose_tiled(const float *__restrict__ x, float *__restrict__ out,
                                           int rows, int cols) {
    transpose_through_tile<0>(x, out, rows, cols);
}

extern "C" __global__ void transpose_padded(const float *__restrict__ x, float *__restrict__ out,
                                            int rows, int cols) {
    transpose_through_tile<1>(x, out, rows, cols);
}

extern "C" __global__ void transpose_swizzled(const float *__restrict__ x,
                                              float *__restrict__ out, int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (row + j < rows && col < cols)
            tile[threadIdx.y + j][threadIdx.x ^ (threadIdx.y + j)] =
                x[(size_t)(row + j) * cols + col];
    __syncthreads();
    col = blockIdx.y * TILE + threadIdx.x;
    row = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (row + j < cols && col < rows)
            out[(size_t)(row + j) * rows + col] =
                tile[threadIdx.x][(threadIdx.y + j) ^ threadIdx.x];
}
