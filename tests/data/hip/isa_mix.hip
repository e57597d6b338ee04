// Kernels that exercise instruction families beyond vlpc's own code, for
// tests/test_emu_hip_isa.py: f16 arithmetic, dot products, float/double division,
// cross-lane shuffles, 8/16-bit integer arithmetic, transcendental functions.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

extern "C" __global__ void half_ops(int n, const float* a, const float* b, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = __float2half(a[i]), y = __float2half(b[i]);
  __half r = __hfma(x, y, __hadd(x, y));        // x * y + (x + y) in f16
  __half ny = __hneg(y);
  out[i] = __half2float(__hgt(r, ny) ? r : ny);
}

typedef _Float16 half2_t __attribute__((ext_vector_type(2)));
typedef short short2_t __attribute__((ext_vector_type(2)));

extern "C" __global__ void dots(int n, const unsigned* a, const unsigned* b, const float* c,
                                float* fout, int* iout) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  half2_t ha = __builtin_bit_cast(half2_t, a[i]);
  half2_t hb = __builtin_bit_cast(half2_t, b[i]);
  fout[i] = __builtin_amdgcn_fdot2(ha, hb, c[i], false);
  iout[i] = __builtin_amdgcn_sdot4((int)a[i], (int)b[i], i, false);
}

extern "C" __global__ void divide(int n, const float* a, const float* b, float* q,
                                  const double* da, const double* db, double* dq) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  q[i] = a[i] / b[i];
  dq[i] = da[i] / db[i];
}

extern "C" __global__ void shuffles(int n, const int* a, int* x1, int* x5, int* up) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? a[i] : 0;
  int r1 = __shfl_xor(v, 1);
  int r5 = __shfl_xor(v, 5);
  int u = __shfl_up(v, 3);
  if (i < n) { x1[i] = r1; x5[i] = r5; up[i] = u; }
}

extern "C" __global__ void small_ints(int n, const int* a, const int* b, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  short s = (short)(a[i] >> 16);
  signed char c = (signed char)b[i];
  unsigned short us = (unsigned short)a[i];
  out[i] = (int)(short)(s * c) + (int)(us >> 3) + (int)(short)(s - (short)b[i]);
}

extern "C" __global__ void trig(int n, const float* a, float* s, float* c, float* e) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  s[i] = sinf(a[i]);
  c[i] = cosf(a[i]);
  e[i] = expf(a[i] * 0.25f) + logf(fabsf(a[i]) + 1.0f);
}
