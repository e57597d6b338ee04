// Element-wise kernels with a bounds check: the grid is rounded up to whole
// workgroups, so the last one has idle lanes (EXEC partially set).
#include <hip/hip_runtime.h>

extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x,
                                 float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// Grid-stride loop: fewer threads than elements, each does several.
extern "C" __global__ void scale_add_stride(int n, float a, float b,
                                            const float* __restrict__ x,
                                            float* __restrict__ out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x) {
    out[i] = fmaf(a, x[i], b) - x[i] * x[i];
  }
}
