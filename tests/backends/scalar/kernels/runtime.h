// The scalar backend's runtime: what every library it prints begins with (scalar_backend.h). Values
// are computed in float; a tensor stored at 16 bits is read widened and written rounded to nearest
// even, so a kernel rounds where the reference interpreter does.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

typedef long long i64;
struct prism_f16 { uint16_t bits; };
struct prism_bf16 { uint16_t bits; };

static inline float prism_wide(float x) { return x; }
static inline float prism_wide(prism_f16 h) {
  _Float16 v;
  std::memcpy(&v, &h.bits, 2);
  return float(v);
}
static inline float prism_wide(prism_bf16 h) {
  const uint32_t u = uint32_t(h.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static inline void prism_put(float& to, float x) { to = x; }
static inline void prism_put(prism_f16& to, float x) {
  const _Float16 v = _Float16(x);
  std::memcpy(&to.bits, &v, 2);
}
static inline void prism_put(prism_bf16& to, float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  to.bits = x != x ? uint16_t(0x7fc0) : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// The kernel IR's folds (engine/backend/kernel_ir.h): a max that keeps the first NaN; online
// softmax's factor from an old running max a to max(a, b), none from -inf; a shift by a masked
// piece's max of -inf read as 0.
static inline float prism_keep_max(float acc, float x) { return x != x || acc != acc ? (acc != acc ? acc : x) : (x > acc ? x : acc); }
static inline float prism_factor(float a, float b) { return a == -INFINITY ? 0.0f : std::exp(a - prism_keep_max(a, b)); }
static inline float prism_shift_of(float m) { return m == -INFINITY ? 0.0f : m; }

static const char* prism_message = "";
extern "C" const char* prism_error(void) { return prism_message; }
