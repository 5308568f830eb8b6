#pragma once
// UNROLL comes from the project's `defines` callable.
__device__ __forceinline__ float scaled(float s, float v) { return s * v * UNROLL; }
