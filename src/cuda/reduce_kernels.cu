// The device reductions behind device_reduce.h. One grid-stride kernel per (type, op): each
// thread loads element i of every input, folds them left to right and stores the result to
// every output, so a cross-process all-reduce writes each slice once into all ranks' buffers.
// Where every buffer is 16-byte aligned a thread takes 16 bytes at a time (one vector load
// per input, one store per output) and the scalar kernel does the tail.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/device_reduce.h"
#include "cuda/launch_shape.h"

namespace coll::cuda {
namespace {

// f16 and bf16 travel as their bits; arithmetic on them is in f32 (as on the host).
struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};

template <class T>
struct Arith {  // the type a value is combined in, and the conversions to and from it
  using type = T;
  __device__ static T load(T v) { return v; }
  __device__ static T store(T v) { return v; }
};
template <>
struct Arith<Half> {
  using type = float;
  __device__ static float load(Half v) { return __half2float(__ushort_as_half(v.bits)); }
  __device__ static Half store(float f) { return Half{__half_as_ushort(__float2half_rn(f))}; }
};
template <>
struct Arith<BFloat> {
  using type = float;
  __device__ static float load(BFloat v) { return __bfloat162float(__ushort_as_bfloat16(v.bits)); }
  __device__ static BFloat store(float f) { return BFloat{__bfloat16_as_ushort(__float2bfloat16_rn(f))}; }
};

// Integers combine as unsigned of at least int's width, so overflow wraps instead of being
// undefined (the host kernels do the same).
template <class T, bool = std::is_integral_v<T>>
struct Wide {
  using type = T;
};
template <class T>
struct Wide<T, true> {
  using type = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
};

// The host kernels' special-value rule (src/reduce/reduce.cc): a result computed from a NaN is
// the canonical quiet NaN, and min/max order -0 below +0.
template <class T>
__device__ T canonicalNan() {
  if constexpr (std::is_same_v<T, double>) return __longlong_as_double(0x7ff8000000000000LL);
  else return __int_as_float(0x7fc00000);
}
template <class T>
__device__ T canonical(T r) {
  if constexpr (std::is_floating_point_v<T>) return r != r ? canonicalNan<T>() : r;
  else return r;
}

struct Sum {
  template <class T>
  __device__ static T apply(T a, T b) {
    using W = typename Wide<T>::type;
    return canonical(static_cast<T>(static_cast<W>(a) + static_cast<W>(b)));
  }
};
struct Prod {
  template <class T>
  __device__ static T apply(T a, T b) {
    using W = typename Wide<T>::type;
    return canonical(static_cast<T>(static_cast<W>(a) * static_cast<W>(b)));
  }
};
struct Min {
  template <class T>
  __device__ static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a || b != b) return canonicalNan<T>();
      if (a == b) return signbit(a) ? a : b;
    }
    return b < a ? b : a;
  }
};
struct Max {
  template <class T>
  __device__ static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a || b != b) return canonicalNan<T>();
      if (a == b) return signbit(a) ? b : a;
    }
    return a < b ? b : a;
  }
};

// Folds element values left to right; the same code for a scalar and for each lane of a vector.
template <class T, class Op>
struct Fold {
  using A = Arith<T>;
  __device__ static T combine(T acc, T x) { return A::store(Op::apply(A::load(acc), A::load(x))); }
  __device__ static T divide(T acc, int divisor) {
    return A::store(A::load(acc) / static_cast<typename A::type>(divisor));
  }
};

template <class T, class Op>
__global__ void reduceKernel(Operands ops, size_t count, int divisor) {
  using F = Fold<T, Op>;
  const T* const* in = reinterpret_cast<const T* const*>(ops.in);
  T* const* out = reinterpret_cast<T* const*>(ops.out);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    T acc = in[0][i];
    for (int k = 1; k < ops.n_in; ++k) acc = F::combine(acc, in[k][i]);
    if (divisor > 1) acc = F::divide(acc, divisor);
    for (int k = 0; k < ops.n_out; ++k) out[k][i] = acc;
  }
}

constexpr size_t kVectorBytes = sizeof(uint4);

template <class T>
union Vector {  // 16 bytes as one load or store, or as lanes of T
  uint4 raw;
  T lane[kVectorBytes / sizeof(T)];
};

// As reduceKernel, 16 bytes per thread and step: `vectors` counts 16-byte vectors.
template <class T, class Op>
__global__ void reduceVectorKernel(Operands ops, size_t vectors, int divisor) {
  using F = Fold<T, Op>;
  constexpr int kLanes = kVectorBytes / sizeof(T);
  const uint4* const* in = reinterpret_cast<const uint4* const*>(ops.in);
  uint4* const* out = reinterpret_cast<uint4* const*>(ops.out);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t v = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors; v += stride) {
    Vector<T> acc, x;
    acc.raw = in[0][v];
    for (int k = 1; k < ops.n_in; ++k) {
      x.raw = in[k][v];
      for (int j = 0; j < kLanes; ++j) acc.lane[j] = F::combine(acc.lane[j], x.lane[j]);
    }
    if (divisor > 1)
      for (int j = 0; j < kLanes; ++j) acc.lane[j] = F::divide(acc.lane[j], divisor);
    for (int k = 0; k < ops.n_out; ++k) out[k][v] = acc.raw;  // every input was read first: in place is safe
  }
}

bool allAligned(const Operands& ops) {
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % kVectorBytes == 0; };
  for (int k = 0; k < ops.n_in; ++k)
    if (!aligned(ops.in[k])) return false;
  for (int k = 0; k < ops.n_out; ++k)
    if (!aligned(ops.out[k])) return false;
  return true;
}

Operands advancedBy(const Operands& ops, size_t bytes) {
  Operands shifted = ops;
  for (int k = 0; k < ops.n_in; ++k) shifted.in[k] = static_cast<const char*>(ops.in[k]) + bytes;
  for (int k = 0; k < ops.n_out; ++k) shifted.out[k] = static_cast<char*>(ops.out[k]) + bytes;
  return shifted;
}

template <class T, class Op>
cudaError_t launch(const Operands& ops, size_t count, int divisor, cudaStream_t stream) {
  size_t vectors = allAligned(ops) ? count * sizeof(T) / kVectorBytes : 0;
  if (vectors > 0) {
    reduceVectorKernel<T, Op><<<blocksFor(vectors), kThreads, 0, stream>>>(ops, vectors, divisor);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  const size_t done = vectors * (kVectorBytes / sizeof(T));
  if (done == count) return cudaSuccess;
  reduceKernel<T, Op><<<blocksFor(count - done), kThreads, 0, stream>>>(advancedBy(ops, done * sizeof(T)),
                                                                        count - done, divisor);
  return cudaGetLastError();
}

template <class T>
cudaError_t launchOp(const Operands& ops, size_t count, ReduceOp op, int divisor, cudaStream_t stream) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return launch<T, Sum>(ops, count, divisor, stream);
    case ReduceOp::prod: return launch<T, Prod>(ops, count, divisor, stream);
    case ReduceOp::min: return launch<T, Min>(ops, count, divisor, stream);
    case ReduceOp::max: return launch<T, Max>(ops, count, divisor, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

int launchReduce(const Operands& ops, size_t count, DataType type, ReduceOp op, int divisor, void* stream_ptr) {
  if (count == 0) return cudaSuccess;
  if (ops.n_in < 1 || ops.n_in > kMaxOperands || ops.n_out < 0 || ops.n_out > kMaxOperands) return cudaErrorInvalidValue;
  if (op != ReduceOp::avg) divisor = 1;
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  switch (type) {
    case DataType::f32: return launchOp<float>(ops, count, op, divisor, stream);
    case DataType::f64: return launchOp<double>(ops, count, op, divisor, stream);
    case DataType::f16: return launchOp<Half>(ops, count, op, divisor, stream);
    case DataType::bf16: return launchOp<BFloat>(ops, count, op, divisor, stream);
    case DataType::i8: return launchOp<int8_t>(ops, count, op, divisor, stream);
    case DataType::u8: return launchOp<uint8_t>(ops, count, op, divisor, stream);
    case DataType::i32: return launchOp<int32_t>(ops, count, op, divisor, stream);
    case DataType::u32: return launchOp<uint32_t>(ops, count, op, divisor, stream);
    case DataType::i64: return launchOp<int64_t>(ops, count, op, divisor, stream);
    case DataType::u64: return launchOp<uint64_t>(ops, count, op, divisor, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace coll::cuda
