// Loops: a naive SGEMM with a k loop and a per-row dot product.
#include <hip/hip_runtime.h>

// C[M][N] = alpha * A[M][K] * B[K][N] + beta * C, all row-major.
extern "C" __global__ void sgemm_naive(int M, int N, int K, float alpha,
                                       const float* __restrict__ A,
                                       const float* __restrict__ B, float beta,
                                       float* __restrict__ C) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

// out[r] = sum_k A[r][k] * v[k]: one thread per row, a data-dependent trip count.
extern "C" __global__ void row_dot(const float* __restrict__ A,
                                   const float* __restrict__ v,
                                   float* __restrict__ out, int rows, int K) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(A[(size_t)r * K + k], v[k], acc);
  out[r] = acc;
}
