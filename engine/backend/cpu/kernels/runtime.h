// max_accumulate: a NaN seen once stays.
static inline float prism_max_into(float acc, float x) { return (x > acc || x != x) ? (acc != acc ? acc : x) : acc; }
// The factor that moves a sum relative to max a onto max(a, b) (online softmax); none from -inf.
static inline float prism_rescale(float a, float b) { return a == -__builtin_inff() ? 0.0f : __builtin_expf(a - prism_max_into(a, b)); }
// A piece's max as softmax's shift subtracts it: -inf (the piece all -inf, masked) as 0.
static inline float prism_finite_max(float m) { return m == -__builtin_inff() ? 0.0f : m; }
// The OpenMP runtime came in with this library; its worker threads outlive any one parallel
// region, so it must never be unloaded with the library (a later dlclose would pull their code
// from under them). Pin it when the library loads.
__attribute__((constructor)) static void prism_pin_openmp() {
  const char* names[] = {"libgomp.so.1", "libomp.so", "libomp.so.5"};
  for (const char* name : names) dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}
// A thread's buffer number SLOT, grown on demand and kept across calls; null out of memory.
// 0: a block's computed tiles (prism_scratch); 1: an AMX kernel's staged B panel; 2: the NT
// kernel's widened A; 3: prism_mm's copied K chunk of B; 4: a streaming AMX kernel's C tiles
// (prism_amx_wide_c; prism_mm_amx_rows' A panels and C tiles); 5: the AMX NT kernel's A^T. The block that calls a matmul holds slot 0.
template <int SLOT>
static void* prism_thread_buffer(size_t bytes) {
  static thread_local void* buffer = nullptr;
  static thread_local size_t size = 0;
  if (size < bytes) {
    free(buffer);
    buffer = aligned_alloc(64, (bytes + 63) / 64 * 64);
    size = buffer ? bytes : 0;
  }
  return buffer;
}
static float* prism_scratch(size_t floats) { return static_cast<float*>(prism_thread_buffer<0>(floats * sizeof(float))); }
