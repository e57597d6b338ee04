// Integer mixes: hashing, popcount, clz, shifts, rotates, mul_hi, division by
// constants (unsigned and signed), min/max and bit reversal.
#include <hip/hip_runtime.h>
#include <stdint.h>

__device__ static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

extern "C" __global__ void int_mix(const uint32_t* __restrict__ in, uint32_t* __restrict__ out,
                                   int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t x = in[i];
  // murmur3 finalizer
  uint32_t h = x;
  h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
  out[8 * i + 0] = h;
  out[8 * i + 1] = (uint32_t)__popc(x) + ((uint32_t)__clz(x) << 8) + ((uint32_t)__ffs(x) << 16);
  out[8 * i + 2] = __umulhi(x, 0x9e3779b9u) ^ rotl32(x, 7);
  out[8 * i + 3] = x / 7u + x % 13u;
  int32_t s = (int32_t)x;
  out[8 * i + 4] = (uint32_t)(s / 3 - s % 10);
  out[8 * i + 5] = (uint32_t)(s >> 5) ^ (x >> 27);
  out[8 * i + 6] = __brev(x) + (uint32_t)max(s, -5) + min(x, 1000u);
  out[8 * i + 7] = (uint32_t)__mulhi(s, -1640531527) + x * 2654435761u;
}

// 64-bit integer arithmetic: splitmix64, 64-bit shifts and division by a constant.
extern "C" __global__ void splitmix64(const uint64_t* __restrict__ in, uint64_t* __restrict__ out,
                                      int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t z = in[i] + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z = z ^ (z >> 31);
  out[2 * i] = z;
  out[2 * i + 1] = z / 1000003ull + (uint64_t)__popcll(z) + __umul64hi(z, in[i]);
}

// int_mix without the murmur finalizer (whose `h ^ (h >> 16)` compiles to SDWA):
// the same popcount/clz/ffs, mul_hi, rotate, division-by-constant and min/max mix.
extern "C" __global__ void int_ops(const uint32_t* __restrict__ in, uint32_t* __restrict__ out,
                                   int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t x = in[i];
  int32_t s = (int32_t)x;
  out[7 * i + 0] = (uint32_t)__popc(x) + ((uint32_t)__clz(x) << 8) + ((uint32_t)__ffs(x) << 16);
  out[7 * i + 1] = __umulhi(x, 0x9e3779b9u) ^ rotl32(x, 7);
  out[7 * i + 2] = x / 7u + x % 13u;
  out[7 * i + 3] = (uint32_t)(s / 3 - s % 10);
  out[7 * i + 4] = (uint32_t)(s >> 5) ^ (x >> 27);
  out[7 * i + 5] = __brev(x) + (uint32_t)max(s, -5) + min(x, 1000u);
  out[7 * i + 6] = (uint32_t)__mulhi(s, -1640531527) + x * 2654435761u;
}
