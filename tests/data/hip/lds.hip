// LDS with __syncthreads: a block reduction and a tiled transpose.
#include <hip/hip_runtime.h>

#define RBLOCK 256
// partial[blockIdx.x] = sum of this block's elements (blockDim.x == RBLOCK).
extern "C" __global__ void __launch_bounds__(RBLOCK)
block_reduce_sum(const float* __restrict__ x, float* __restrict__ partial, int n) {
  __shared__ float s[RBLOCK];
  int tid = threadIdx.x;
  int i = blockIdx.x * RBLOCK * 2 + tid;
  float v = 0.0f;
  if (i < n) v = x[i];
  if (i + RBLOCK < n) v += x[i + RBLOCK];
  s[tid] = v;
  __syncthreads();
  for (int stride = RBLOCK / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = s[0];
}

#define TILE 32
#define ROWS 8
// out (cols x rows) = transpose(in (rows x cols)); block (TILE, ROWS).
extern "C" __global__ void __launch_bounds__(TILE * ROWS)
transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Dynamic LDS (extern __shared__): reverse each block's chunk in place.
extern "C" __global__ void reverse_block_dyn(float* __restrict__ data, int n) {
  extern __shared__ float buf[];
  int base = blockIdx.x * blockDim.x;
  int t = threadIdx.x;
  int cnt = min((int)blockDim.x, n - base);
  if (t < cnt) buf[t] = data[base + t];
  __syncthreads();
  if (t < cnt) data[base + t] = buf[cnt - 1 - t];
}
