// Helpers shared by the BF16 GEMM iterations: C = A @ B, A (MxK) and B (KxN) bfloat16
// row-major, C (MxN) float32 row-major, float32 accumulation on the tensor cores.
// Tile sizes arrive as -D macros from the host (gemm_bf16_project.py), which only launches
// shapes whose M, N and K are multiples of BM, BN and BK: no kernel checks bounds.
#pragma once

#include <cuda_bf16.h>

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define CHUNK 8  // bf16 per 16-byte copy
#define A_CHUNKS (BM * BK / CHUNK / THREADS)  // 16-byte pieces of the A tile per thread
#define B_CHUNKS (BK * BN / CHUNK / THREADS)  // 16-byte pieces of the B tile per thread

// Where the tensor-core iterations put 16-byte chunk `chunk` of row `row` of a tile whose rows
// are ROW_CHUNKS chunks long. ldmatrix reads 8 rows of one chunk at a time, which without a
// swizzle sit in the same banks (a row of A is 64 bytes, of B 256 bytes). XOR-ing the chunk
// with bits of the row spreads any 8 consecutive rows over the 8 16-byte units of a 128-byte
// bank line:
//  - A rows are 4 chunks: two rows share a line, so the unit is (row & 1, chunk ^ (row>>1 & 3));
//  - B rows are 16 chunks: the low 3 bits of the chunk are XOR-ed with row & 7.
// A warp's 16-byte stores (8 threads per wavefront, consecutive chunks) stay conflict-free too,
// as the XOR with one row's bits only permutes the chunks of that row.
template <int ROW_CHUNKS>
__device__ __forceinline__ int swizzle(int row, int chunk) {
    static_assert(ROW_CHUNKS == 4 || ROW_CHUNKS % 8 == 0, "rows of 4 or 8k chunks");
    if (ROW_CHUNKS == 4) return row * 4 + (chunk ^ ((row >> 1) & 3));
    return row * ROW_CHUNKS + (chunk ^ (row & 7));
}

__device__ __forceinline__ unsigned smem_address(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Four 8x8 b16 matrices; lane i gives the address of row i % 8 of matrix i / 8.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

// The same, transposed on the way: what the `col` operand B of mma needs from a row-major tile.
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

// d += a * b on one 16x8x16 tile: a is 4 registers of bf16 pairs, b two, d four floats.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const unsigned (&a)[4],
                                               unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The warp tile's mma work on one BK-deep stage of swizzled A (BMxBK) and B (BKxBN) tiles:
// per 16 of k, WM/16 ldmatrix.x4 of A, WN/16 ldmatrix.x4.trans of B, (WM/16)*(WN/8) mma.
// acc[i][j] is the 16x8 output fragment i down, j across the warp tile.
__device__ __forceinline__ void warp_tile_mma(float (&acc)[WM / 16][WN / 8][4],
                                              const uint4 *As, const uint4 *Bs, int warp_m,
                                              int warp_n, int lane) {
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
        unsigned a[WM / 16][4];
        unsigned b[WN / 16][4];
#pragma unroll
        for (int i = 0; i < WM / 16; ++i) {
            // lanes 0-15: rows 0-15 at k 0-7; lanes 16-31: the same rows at k 8-15
            const int row = warp_m * WM + i * 16 + (lane & 15);
            const int chunk = kk * 2 + (lane >> 4);
            ldmatrix_x4(a[i], smem_address(As + swizzle<BK / CHUNK>(row, chunk)));
        }
#pragma unroll
        for (int j = 0; j < WN / 16; ++j) {
            // lanes 0-15: k rows 0-15 at n 0-7; lanes 16-31: the same k at n 8-15
            const int row = kk * 16 + (lane & 15);
            const int chunk = (warp_n * WN + j * 16) / CHUNK + (lane >> 4);
            ldmatrix_x4_trans(b[j], smem_address(Bs + swizzle<BN / CHUNK>(row, chunk)));
        }
#pragma unroll
        for (int i = 0; i < WM / 16; ++i) {
#pragma unroll
            for (int j = 0; j < WN / 8; ++j) {
                mma_bf16_16816(acc[i][j], a[i], b[j / 2][(j % 2) * 2], b[j / 2][(j % 2) * 2 + 1]);
            }
        }
    }
}

// Writes the warp tile: lane holds rows lane/4 and lane/4 + 8, columns 2*(lane%4) + 0, 1 of
// each 16x8 fragment, stored as float2.
__device__ __forceinline__ void store_warp_tile(float *__restrict__ C, int N, int row0, int col0,
                                                const float (&acc)[WM / 16][WN / 8][4],
                                                int lane) {
#pragma unroll
    for (int i = 0; i < WM / 16; ++i) {
#pragma unroll
        for (int j = 0; j < WN / 8; ++j) {
            const int row = row0 + i * 16 + lane / 4;
            const int col = col0 + j * 8 + 2 * (lane % 4);
            *reinterpret_cast<float2 *>(C + (size_t)row * N + col) =
                make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2 *>(C + (size_t)(row + 8) * N + col) =
                make_float2(acc[i][j][2], acc[i][j][3]);
        }
    }
}
