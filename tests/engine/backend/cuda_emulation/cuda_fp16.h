// Test support (prism_cuda_host.h): __half on the host, round to nearest even through _Float16.
#pragma once
struct __half {
  _Float16 v;
};
inline float __half2float(__half h) { return float(h.v); }
inline __half __float2half_rn(float f) { return __half{_Float16(f)}; }
#include <cstring>
inline unsigned short __half_as_ushort(__half h) {
  unsigned short u;
  std::memcpy(&u, &h.v, 2);
  return u;
}
inline __half __ushort_as_half(unsigned short u) {
  __half h;
  std::memcpy(&h.v, &u, 2);
  return h;
}
