// A plain LDS-tiled, register-blocked SGEMM for gfx906, the kind a kernel engineer writes in an
// afternoon (after the classic CUDA SGEMM walk-throughs): C = alpha * A * B^T + beta * C, "NT"
// (A is M x K row-major with leading dimension lda, B is N x K row-major with ldb, C is M x N
// row-major with ldc), all f32.
//
// Workgroup: 256 work-items (16 x 16) compute a 128 x 128 tile of C; each work-item an 8 x 8
// block (64 accumulators in VGPRs).  Per step of 8 along K the workgroup stages A's 128 x 8 and
// B's 128 x 8 panels in LDS, transposed to k-major so the inner product reads 8 + 8 contiguous
// values per k (ds_read_b128).  Loads are float4 along K when the panel is in bounds and the
// leading dimensions are multiples of 4; otherwise element by element with bounds checks
// (any M, N, K).  BLAS rules: beta == 0 never reads C (NaN C stays out), alpha == 0 reads
// neither A nor B.
//
// Build (Debian's ROCm 5.2 hipcc; see build.sh):
//   HIP_PLATFORM=amd hipcc --offload-arch=gfx906 --cuda-device-only --no-gpu-bundle-output -O3 \
//       -c hip_tiled_sgemm.hip -o hip_tiled_sgemm.hsaco
// Launch: grid (ceil(N / 128), ceil(M / 128)), block (256).
#include <hip/hip_runtime.h>

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8

extern "C" __global__ void __launch_bounds__(256)
sgemm_nt_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               int M, int N, int K, int lda, int ldb, int ldc, float alpha, float beta) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  // Each work-item stages 4 consecutive k of one row of A's panel and of B's panel.
  const int lr = tid / 2, lk = (tid % 2) * 4;
  const bool vec = ((lda | ldb) & 3) == 0;
  if (alpha != 0.0f) {
    for (int k0 = 0; k0 < K; k0 += BK) {
      const int ar = row0 + lr, br = col0 + lr, kk = k0 + lk;
      float a4[4], b4[4];
      if (vec && ar < M && kk + 3 < K) {
        float4 v = *reinterpret_cast<const float4*>(A + (size_t)ar * lda + kk);
        a4[0] = v.x; a4[1] = v.y; a4[2] = v.z; a4[3] = v.w;
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) a4[q] = (ar < M && kk + q < K) ? A[(size_t)ar * lda + kk + q] : 0.0f;
      }
      if (vec && br < N && kk + 3 < K) {
        float4 v = *reinterpret_cast<const float4*>(B + (size_t)br * ldb + kk);
        b4[0] = v.x; b4[1] = v.y; b4[2] = v.z; b4[3] = v.w;
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) b4[q] = (br < N && kk + q < K) ? B[(size_t)br * ldb + kk + q] : 0.0f;
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        As[lk + q][lr] = a4[q];
        Bs[lk + q][lr] = b4[q];
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        float a[TM], b[TN];
        // rows ty*4 .. +3 and 64 + ty*4 .. +3 of the panel (columns likewise with tx)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          a[i] = As[k][ty * 4 + i];
          a[4 + i] = As[k][64 + ty * 4 + i];
          b[i] = Bs[k][tx * 4 + i];
          b[4 + i] = Bs[k][64 + tx * 4 + i];
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      __syncthreads();
    }
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = col0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + (j - 4));
      if (c >= N) continue;
      float* p = C + (size_t)r * ldc + c;
      const float v = alpha * acc[i][j];
      *p = beta == 0.0f ? v : fmaf(beta, *p, v);
    }
  }
}
