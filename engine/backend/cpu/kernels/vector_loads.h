static inline vf vload(const float* p) { vf v; __builtin_memcpy(&v, p, sizeof v); return v; }
// 16-bit storage widened as it is loaded: bf16 is the top half of an f32; f16 through its
// branch-free conversion, lane by lane (GCC vectorizes the lanes).
static inline vf vload(const prism_bf16* p) {
#ifdef PRISM_ZERO_EXTEND
  // vpmovzxwd + vpslld (GCC splits __builtin_convertvector into 256-bit halves and shuffles).
  prism_vhi h;
  __builtin_memcpy(&h, p, sizeof h);
  return (vf)((vu)PRISM_ZERO_EXTEND(h) << 16);
#else
  vh h;
  __builtin_memcpy(&h, p, sizeof h);
  return (vf)(__builtin_convertvector(h, vu) << 16);
#endif
}
static inline vf vload(const prism_f16* p) {
#ifdef PRISM_F16_VCVT
  prism_vhi h;
  __builtin_memcpy(&h, p, sizeof h);
  return PRISM_F16_VCVT(h);
#else
  vf v;
#pragma GCC unroll 16
  for (int i = 0; i < int(kW); ++i) v[i] = p[i];
  return v;
#endif
}
static inline void vstore(float* p, vf v) { __builtin_memcpy(p, &v, sizeof v); }
// GCC contracts a * b + c into one FMA in C++ (-ffp-contract=fast is its default outside ISO C).
static inline vf vfma(vf a, vf b, vf c) { return a * b + c; }
