// What the warp-specialized iterations share: the roles of their warpgroups, the registers
// setmaxnreg gives each role, and the order in which a persistent block walks the tiles of C.
#pragma once

// Included after hopper.cuh (the harness inlines one level of local headers).

#define CONSUMERS (BM / 64)              // consumer warpgroups, 64 rows of the tile each
#define THREADS ((CONSUMERS + 1) * 128)  // and the producer warpgroup
// setmaxnreg: the producer keeps 40 registers a thread, the consumers share the rest of the
// SM's 64K (a multiple of 8, at most 232).
#define PRODUCER_REGISTERS 40
#define CONSUMER_REGISTERS_FREE ((65536 / 128 - PRODUCER_REGISTERS) / CONSUMERS / 8 * 8)
#define CONSUMER_REGISTERS (CONSUMER_REGISTERS_FREE < 232 ? CONSUMER_REGISTERS_FREE : 232)

// The origin (row, column) of tile `tile` of C, of `rows` x BN elements each: GROUP tile rows
// at a time, down the rows first, so the blocks that run together read the A tiles of GROUP
// rows and the B tiles of a few columns.
__device__ __forceinline__ int2 tile_origin(int tile, int tiles_m, int tiles_n, int rows) {
    const int per_group = GROUP * tiles_n;
    const int first = tile / per_group * GROUP;
    const int group_rows = min(GROUP, tiles_m - first);
    const int in_group = tile % per_group;
    return make_int2((first + in_group % group_rows) * rows, in_group / group_rows * BN);
}
