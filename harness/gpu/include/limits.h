// ncuh's stand-in for <limits.h> under NVRTC (LP64, as on Linux x86-64 and aarch64).
#pragma once
// CCCL's own (as <cuda/std/climits> declares it under NVRTC) where it is on the include
// path, so the two never disagree; these definitions otherwise.
#if __has_include(<cuda/std/climits>)
#include <cuda/std/climits>
#else
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define SHRT_MIN (-32767 - 1)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-2147483647 - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LONG_MIN (-9223372036854775807L - 1)
#define LONG_MAX 9223372036854775807L
#define ULONG_MAX 18446744073709551615UL
#define LLONG_MIN (-9223372036854775807LL - 1)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
#endif
