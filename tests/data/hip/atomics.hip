// Atomics: atomicAdd on int (histogram) and unsigned long long (a 64-bit sum),
// and a float add built from an atomicCAS loop (gfx906 has no global f32 atomic add).
#include <hip/hip_runtime.h>
#include <stdint.h>

extern "C" __global__ void histogram(const uint32_t* __restrict__ in, int* __restrict__ bins,
                                     int n, int nbins) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[in[i] % (uint32_t)nbins], 1);
}

extern "C" __global__ void sum_u64(const uint32_t* __restrict__ in,
                                   unsigned long long* __restrict__ total, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(total, (unsigned long long)in[i] * 4294967311ull);
}

__device__ static float atomic_add_f32_cas(float* addr, float val) {
  unsigned int* p = (unsigned int*)addr;
  unsigned int old = *p, assumed;
  do {
    assumed = old;
    old = atomicCAS(p, assumed, __float_as_uint(__uint_as_float(assumed) + val));
  } while (assumed != old);
  return __uint_as_float(old);
}

extern "C" __global__ void sum_f32_cas(const float* __restrict__ x, float* __restrict__ sum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomic_add_f32_cas(sum, x[i]);
}
