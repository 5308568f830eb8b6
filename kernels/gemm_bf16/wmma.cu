// Iteration 1: the tensor cores through WMMA, the warp-wide matrix instructions behind
// nvcuda::wmma, written as the PTX `wmma.*` instructions that <mma.h> compiles to (its
// <crt/mma.h> half ships only with a full CUDA toolkit, not with NVRTC's headers). A block
// computes a BMxBN tile of C with THREADS threads; each warp owns a WMxWN warp tile,
// (WM/16)x(WN/16) accumulator fragments of 16x16 floats. Each BK step stages a BMxBK tile of A
// and a BKxBN tile of B in shared memory (16-byte loads and stores), then every warp loads
// 16x16x16 bf16 fragments from there (wmma.load) and issues wmma.mma. Rows are padded by 8
// bf16 (16 bytes): WMMA wants a leading dimension that is a multiple of 8 and 32-byte aligned
// fragments, and the padding shifts consecutive rows by a bank group. The output fragments
// go straight to global memory (wmma.store).
#include "common.cuh"

#define AS_LD (BK + 8)
#define BS_LD (BN + 8)

// A 16x16 bf16 fragment of A (row-major, leading dimension ld) is 4 registers of bf16 pairs.
__device__ __forceinline__ void wmma_load_a(unsigned (&a)[4], const __nv_bfloat16 *p, int ld) {
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "l"(p), "r"(ld));
}

// A 16x16 bf16 fragment of B (row-major), 4 registers.
__device__ __forceinline__ void wmma_load_b(unsigned (&b)[4], const __nv_bfloat16 *p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                 : "l"(p), "r"(ld));
}

// d += a * b on a 16x16x16 tile; d is 8 floats per thread.
__device__ __forceinline__ void wmma_mma(float (&d)[8], const unsigned (&a)[4],
                                         const unsigned (&b)[4]) {
    asm volatile(
        "wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, "
        "{%0, %1, %2, %3, %4, %5, %6, %7};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]),
          "r"(b[3]));
}

// Writes a 16x16 float fragment to row-major memory with leading dimension ld.
__device__ __forceinline__ void wmma_store(float *p, const float (&d)[8], int ld) {
    asm volatile(
        "wmma.store.d.sync.aligned.row.m16n16k16.f32 [%0], "
        "{%1, %2, %3, %4, %5, %6, %7, %8}, %9;\n" ::"l"(p),
        "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]), "f"(d[4]), "f"(d[5]), "f"(d[6]), "f"(d[7]),
        "r"(ld)
        : "memory");
}

extern "C" __global__ void __launch_bounds__(THREADS)
    gemm_bf16_wmma(int M, int N, int K, const __nv_bfloat16 *__restrict__ A,
                   const __nv_bfloat16 *__restrict__ B, float *__restrict__ C) {
    __shared__ __align__(32) __nv_bfloat16 As[BM * AS_LD];
    __shared__ __align__(32) __nv_bfloat16 Bs[BK * BS_LD];

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int warp_m = warp / (BN / WN);
    const int warp_n = warp % (BN / WN);
    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;

    float acc[WM / 16][WN / 16][8] = {};

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int c = 0; c < A_CHUNKS; ++c) {
            const int piece = tid + c * THREADS;
            const int row = piece / (BK / CHUNK);
            const int col = (piece % (BK / CHUNK)) * CHUNK;
            *reinterpret_cast<uint4 *>(As + row * AS_LD + col) = *reinterpret_cast<const uint4 *>(
                A + (size_t)(block_row + row) * K + k0 + col);
        }
#pragma unroll
        for (int c = 0; c < B_CHUNKS; ++c) {
            const int piece = tid + c * THREADS;
            const int row = piece / (BN / CHUNK);
            const int col = (piece % (BN / CHUNK)) * CHUNK;
            *reinterpret_cast<uint4 *>(Bs + row * BS_LD + col) = *reinterpret_cast<const uint4 *>(
                B + (size_t)(k0 + row) * N + block_col + col);
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[WM / 16][4];
            unsigned b[WN / 16][4];
#pragma unroll
            for (int i = 0; i < WM / 16; ++i)
                wmma_load_a(a[i], As + (warp_m * WM + i * 16) * AS_LD + kk, AS_LD);
#pragma unroll
            for (int j = 0; j < WN / 16; ++j)
                wmma_load_b(b[j], Bs + kk * BS_LD + warp_n * WN + j * 16, BS_LD);
#pragma unroll
            for (int i = 0; i < WM / 16; ++i)
#pragma unroll
                for (int j = 0; j < WN / 16; ++j) wmma_mma(acc[i][j], a[i], b[j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < WM / 16; ++i)
#pragma unroll
        for (int j = 0; j < WN / 16; ++j)
            wmma_store(C + (size_t)(block_row + warp_m * WM + i * 16) * N + block_col +
                           warp_n * WN + j * 16,
                       acc[i][j], N);
}
