// f64 arithmetic: daxpy, a per-block f64 dot product, and f64 division/sqrt.
#include <hip/hip_runtime.h>

extern "C" __global__ void daxpy(int n, double a, const double* __restrict__ x,
                                 double* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

#define DBLOCK 128
// partial[blockIdx.x] = sum over this block's slice of x*y (blockDim.x == DBLOCK).
extern "C" __global__ void __launch_bounds__(DBLOCK)
ddot_partial(int n, const double* __restrict__ x, const double* __restrict__ y,
             double* __restrict__ partial) {
  __shared__ double s[DBLOCK];
  int tid = threadIdx.x;
  double acc = 0.0;
  for (int i = blockIdx.x * DBLOCK + tid; i < n; i += DBLOCK * gridDim.x) acc = fma(x[i], y[i], acc);
  s[tid] = acc;
  __syncthreads();
  for (int stride = DBLOCK / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = s[0];
}

// out[i] = (x[i] / (y[i] + 3)) + sqrt(|x[i]|) ; exercises v_div_scale/fmas/fixup_f64, v_rsq/v_sqrt.
extern "C" __global__ void ddiv_sqrt(int n, const double* __restrict__ x,
                                     const double* __restrict__ y, double* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] / (y[i] + 3.0) + sqrt(fabs(x[i]));
}

// f64 without division: sqrt (v_rsq_f64 + Newton steps), fma, min/max, compares.
extern "C" __global__ void dsqrt_fma(int n, const double* __restrict__ x,
                                     const double* __restrict__ y, double* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double v = x[i];
    double r = fma(sqrt(fabs(v)), y[i], v * v);
    out[i] = (v < 0.0) ? fmin(r, 1e6) : fmax(r, -1.0);
  }
}
