#include <hip/hip_runtime.h>

// A private array indexed at run time lives in scratch (the private segment).
extern "C" __global__ void private_array(const float* __restrict__ x, float* __restrict__ y,
                                         const int* __restrict__ sel, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a[48];
  for (int k = 0; k < 48; ++k) a[k] = x[i] * (float)(k + 1);
  y[i] = a[sel[i] % 48] + a[(sel[i] + 7) % 48];
}

// Built at -O0: every local, the 64-bit pointers included, is stored to scratch and reloaded
// (the private segment buffer for the frame, flat addresses in the private aperture for the
// allocas whose address is taken).
extern "C" __global__ void spill_pointers(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float* src = x + i;
  float* dst = y + i;
  if (i < n) *dst = *src * a + (float)i;
}
