// Memory microbenchmark kernels for benchmarks/microbench/memory.py (built by hipcc for
// gfx906: HIP_PLATFORM=amd hipcc --offload-arch=gfx906 --cuda-device-only
// --no-gpu-bundle-output -O3 -c memory.hip -o memory.hsaco).
#include <hip/hip_runtime.h>

// Streaming reads: each work-item loads UNROLL elements strided by the whole grid (all
// loads issued before the first use), so a wave keeps UNROLL loads in flight.
#define UNROLL 4

extern "C" __global__ void stream_dword(const float* __restrict__ a, float* __restrict__ out) {
  const unsigned stride = gridDim.x * blockDim.x;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float v[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) v[u] = a[i + u * stride];
  float s = 0.f;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) s += v[u];
  if (s == -1.2345f) out[i] = s;  // never true for the inputs: keeps the loads alive
}

extern "C" __global__ void stream_dwordx4(const float4* __restrict__ a, float* __restrict__ out) {
  const unsigned stride = gridDim.x * blockDim.x;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 v[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) v[u] = a[i + u * stride];
  float s = 0.f;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
  if (s == -1.2345f) out[i] = s;
}

// Pointer chasing: one work-item follows next[] for `steps` loads; each load's address
// is the previous load's result, so the time per step is the load-to-use latency.
// `zero` (0 at run time) makes the index per-lane, so the compiler emits global_load_dword.
extern "C" __global__ void chase_vector(const unsigned* next, unsigned steps, unsigned zero,
                                        unsigned* out) {
  unsigned p = threadIdx.x * zero;
  for (unsigned s = 0; s < steps; ++s) p = next[p] + threadIdx.x * zero;
  out[0] = p;
}

// The same through the scalar cache: the index is uniform, so the compiler uses s_load.
extern "C" __global__ void chase_scalar(const unsigned* __restrict__ next, unsigned steps,
                                        unsigned* __restrict__ out) {
  unsigned p = 0;
  for (unsigned s = 0; s < steps; ++s) p = __builtin_amdgcn_readfirstlane(next[p]);
  out[0] = p;
}

// Global atomics chained: each atomic's returned value feeds the next one's address.
// `zero` (0 at run time) keeps LLVM from turning an add of 0 into a load.
extern "C" __global__ void chase_atomic(unsigned* next, unsigned steps, unsigned zero, unsigned* out) {
  unsigned p = 0;
  for (unsigned s = 0; s < steps; ++s) p = atomicAdd(&next[p], zero);  // global_atomic_add ... glc
  out[0] = p;
}
