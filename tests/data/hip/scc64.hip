#include <hip/hip_runtime.h>
// Uniform 64-bit compares with no other SCC writer before them: LLVM selects s_cmp_eq_u64 /
// s_cmp_lg_u64 and s_cselect, the first SCC writer of the kernel being a 64-bit compare.
extern "C" __global__ void select64(const long long* __restrict__ a, long long* __restrict__ out,
                                    long long key, long long alt) {
  long long base = (key != 0) ? key : alt;
  long long off = (key == alt) ? 1 : 2;
  int i = threadIdx.x;
  out[i] = a[i] + base * off;
}
