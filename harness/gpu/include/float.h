// ncuh's stand-in for <float.h> under NVRTC (IEEE 754 binary32 and binary64).
#pragma once
// CCCL's own (as <cuda/std/cfloat> declares it under NVRTC) where it is on the include
// path, so the two never disagree; these definitions otherwise.
#if __has_include(<cuda/std/cfloat>)
#include <cuda/std/cfloat>
#else
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define DBL_MANT_DIG 53
#define FLT_DIG 6
#define DBL_DIG 15
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define DBL_MAX 1.7976931348623158e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-16
#endif
