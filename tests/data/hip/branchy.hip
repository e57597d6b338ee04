// Divergent control flow: per-lane data-dependent loops and a switch.
#include <hip/hip_runtime.h>

extern "C" __global__ void collatz_steps(const int* __restrict__ in, int* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned int v = (unsigned int)in[i];
  int steps = 0;
  while (v > 1u && steps < 1000) {
    v = (v & 1u) ? 3u * v + 1u : v >> 1;
    ++steps;
  }
  out[i] = steps;
}

extern "C" __global__ void branchy(const int* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  float r;
  switch (v & 7) {
    case 0: r = (float)v * 0.5f; break;
    case 1: r = (float)(v >> 2); break;
    case 2: r = (v > 0) ? 1.0f : -1.0f; break;
    case 3: r = (float)(v % 11); break;
    case 5: r = (float)(v * v); break;
    default: r = -(float)v; break;
  }
  if ((i & 3) == 0) r += 100.0f;
  else if (v < 0) r -= 7.0f;
  out[i] = r;
}
