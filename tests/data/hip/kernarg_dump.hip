// Copies the kernel's own kernarg segment (explicit and hidden arguments) to
// out[], so a test can compare the bytes a device really passed with what the
// HIP path's argument buffer would hold.  Launch with one workgroup of >= ndwords lanes.
#include <hip/hip_runtime.h>
#include <stdint.h>

extern "C" __global__ void dump_kernargs(uint32_t* __restrict__ out, int ndwords, float f,
                                         double d, unsigned long long u, short s, char c) {
  const uint32_t* ka = (const uint32_t*)__builtin_amdgcn_kernarg_segment_ptr();
  int i = threadIdx.x;
  if (i < ndwords) out[i] = ka[i];
  // Touch every argument (and blockDim/gridDim, which v5 reads from hidden
  // arguments) so none is dropped; never true for a sane launch.
  if (ndwords < 0)
    out[0] = (uint32_t)f + (uint32_t)d + (uint32_t)u + (uint32_t)s + (uint32_t)c +
             blockDim.x + gridDim.y;
}
