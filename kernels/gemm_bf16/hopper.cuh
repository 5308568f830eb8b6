// The Hopper pieces the WGMMA iterations share: TMA tensor-map copies completing on mbarriers,
// shared-memory matrix descriptors of the 128-byte swizzle, wgmma.m64n128k16, one stage's
// wgmma work of a warpgroup and the epilogue that stores its accumulators.
// Tile sizes BM, BN, BK arrive as -D macros from the host (gemm_bf16_project.py).
//
// Shared memory of one stage, from a 1024-byte boundary (the swizzle repeats every 8 rows of
// 128 bytes, and the descriptors assume the pattern starts there):
//   A: BM rows of BK = 64 bf16 (128 bytes), K-major, as TMA writes a {64, BM} box;
//   B: BN / 64 blocks of BK rows of 64 bf16, N-major: B is K x N row-major, so each {64, BK}
//      box is 64 columns of B; wgmma reads it transposed (imm-trans-b = 1, allowed for bf16).
// Both are swizzled by TMA: 16-byte chunk c of row r is stored at chunk c ^ (r % 8).
#pragma once

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)  // a macro's value in inline PTX
#define WGMMA_N 128              // columns of C one wgmma.m64n128k16 computes
#define ROW_BYTES 128            // a swizzled row: 64 bf16
#define GROUP_BYTES (8 * ROW_BYTES)  // 8 rows: one period of the 128-byte swizzle
#define A_STAGE_BYTES (BM * BK * 2)
#define B_BLOCK_BYTES (BK * ROW_BYTES)  // 64 columns of B, BK rows deep
#define STAGE_BYTES (A_STAGE_BYTES + BK * BN * 2)

// CUtensorMap: 128 opaque bytes made on the host (cuTensorMapEncodeTiled), passed by value.
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned smem_address(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- mbarriers ----------------------------------------------------------------------------

__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

// One arrival that also tells the barrier how many bytes the copies will bring.
__device__ __forceinline__ void mbarrier_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Waits until the phase of the given parity has completed.
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "retry:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra retry;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

// ---- TMA ----------------------------------------------------------------------------------

// The box of `map` at (inner, outer) elements into shared memory at `dst`; its bytes count
// towards the transaction of `bar`.
__device__ __forceinline__ void tma_load(unsigned dst, const TensorMap *map, int inner, int outer,
                                         unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
        "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(inner), "r"(outer), "r"(bar)
        : "memory");
}

// ---- WGMMA --------------------------------------------------------------------------------

// A shared-memory matrix descriptor: the start address, the leading and stride byte offsets
// (each in 16-byte units) and the layout: 1 = 128-byte swizzle.
__device__ __forceinline__ unsigned long long descriptor(unsigned address, unsigned leading,
                                                         unsigned stride) {
    return (unsigned long long)((address & 0x3FFFF) >> 4) |
           (unsigned long long)(leading >> 4) << 16 | (unsigned long long)(stride >> 4) << 32 |
           1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most `pending` of this warp's wgmma groups are in flight.
template <int pending>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}

// d (64x128 floats over the warpgroup) += A (64x16, K-major) * B (16x128, N-major); with
// accumulate = 0, d = A * B (d is not read).
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[WGMMA_N / 2],
                                                 unsigned long long desc_a,
                                                 unsigned long long desc_b, int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, "
        // scale-d (1: d += a b), scale-a, scale-b, then A K-major (0), B N-major (1)
        "%64, %65, accumulate, 1, 1, 0, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// ---- the kernel ---------------------------------------------------------------------------

// Thread 0 starts stage `stage`'s copies: the A tile, then BN / 64 blocks of B.
__device__ __forceinline__ void load_stage(unsigned stage, unsigned bar, const TensorMap *a_map,
                                           const TensorMap *b_map, int block_row, int block_col,
                                           int k0) {
    mbarrier_expect_tx(bar, STAGE_BYTES);
    tma_load(stage, a_map, k0, block_row, bar);
#pragma unroll
    for (int j = 0; j < BN / 64; ++j)
        tma_load(stage + A_STAGE_BYTES + j * B_BLOCK_BYTES, b_map, block_col + j * 64, k0, bar);
}

// One stage's wgmmas of a warpgroup: its 64 rows of A (from `a`) times all BN columns of the
// stage's B (from `b`), BK / 16 steps of k, one m64n128k16 per 128 columns each. Without
// `accumulate`, the stage's first wgmmas overwrite acc instead of adding to it.
__device__ __forceinline__ void warpgroup_stage_mma(float (&acc)[BN / WGMMA_N][WGMMA_N / 2],
                                                    unsigned a, unsigned b, bool accumulate) {
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
#pragma unroll
        for (int h = 0; h < BN / WGMMA_N; ++h) {
            // A: 16 of k are 32 bytes into each swizzled row; the next 8 rows are
            // GROUP_BYTES on. B: 16 of k are 16 rows down; the next 64 columns are
            // B_BLOCK_BYTES on, the next 8 rows of k GROUP_BYTES on.
            wgmma_m64n128k16(acc[h], descriptor(a + kk * 32, 16, GROUP_BYTES),
                             descriptor(b + h * (WGMMA_N / 64) * B_BLOCK_BYTES +
                                            kk * 16 * ROW_BYTES,
                                        B_BLOCK_BYTES, GROUP_BYTES),
                             kk > 0 || accumulate);
        }
    }
}

// Stores a warpgroup's 64 x BN accumulators at (row0, col0) of C; `thread` is the thread's
// index in its warpgroup. The accumulator layout of wgmma .m64nNk16: warp w of the warpgroup
// holds rows 16w to 16w + 15; register 4j + 2h + e is row lane / 4 + 8h, column
// 8j + 2 (lane % 4) + e.
__device__ __forceinline__ void store_accumulators(float *__restrict__ C, int N, int row0,
                                                   int col0, int thread,
                                                   float (&acc)[BN / WGMMA_N][WGMMA_N / 2]) {
    const int lane = thread % 32;
    const int row = row0 + thread / 32 * 16 + lane / 4;
#pragma unroll
    for (int h = 0; h < BN / WGMMA_N; ++h) {
#pragma unroll
        for (int j = 0; j < WGMMA_N / 8; ++j) {
            const int col = col0 + h * WGMMA_N + j * 8 + 2 * (lane % 4);
            *reinterpret_cast<float2 *>(C + (size_t)row * N + col) =
                make_float2(acc[h][4 * j], acc[h][4 * j + 1]);
            *reinterpret_cast<float2 *>(C + (size_t)(row + 8) * N + col) =
                make_float2(acc[h][4 * j + 2], acc[h][4 * j + 3]);
        }
    }
}
