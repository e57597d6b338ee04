// Kernels built with -fgpu-flush-denormals-to-zero (tests/data/hip/build.sh), for
// tests/test_emu_hip_ftz.py: the descriptor requests FLOAT_DENORM_MODE_32 = 0 (f32
// denormals flushed, f16/f64 kept), and the emulator must follow it.
#include <hip/hip_runtime.h>

typedef _Float16 half2_t __attribute__((ext_vector_type(2)));

extern "C" __global__ void mul_add(int n, const float* a, const float* b, const float* c,
                                   float* prod, float* sum) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  prod[i] = a[i] * b[i];
  sum[i] = a[i] + c[i];
}

extern "C" __global__ void pack_rtz(int n, const float* a, const float* b, unsigned* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = __builtin_bit_cast(unsigned, __builtin_amdgcn_cvt_pkrtz(a[i], b[i]));
}

extern "C" __global__ void dmul(int n, const double* a, const double* b, double* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = a[i] * b[i];
}
