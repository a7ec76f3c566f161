// Two user kernels for dnnc's custom-dispatch example. The calling convention dnnc
// checks against the declaration: every binding as a pointer, in declared order,
// then every push constant by value. extern "C" keeps the entry names unmangled.

// out[i] = lhs[i] * rhs[i] for i < dim
extern "C" __global__ void simple_mul(const float* __restrict__ lhs, const float* __restrict__ rhs,
                                      float* __restrict__ out, int dim) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < dim) out[i] = lhs[i] * rhs[i];
}

// rhs[i] *= lhs[i] for i < dim, in place
extern "C" __global__ void simple_mul_inplace(const float* __restrict__ lhs, float* __restrict__ rhs, int dim) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < dim) rhs[i] *= lhs[i];
}
