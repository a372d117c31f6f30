// Hand-written sGraph families for the workloads of docs/design.md §8, in the sGraph text form, with
// the programs they implement. Shared by the sGraph tests.
#pragma once
#include <string>

#include "engine/ir/ops.h"

namespace prism::test::families {

// matmul(rms_norm(X), W): the grid splits W's columns, the loop walks d accumulating both X@W
// and the sum of squares of X; the division by rms comes after the loop.
inline constexpr const char* kRmsLinearProgram = R"(program rms_linear(X: f16[n, d], W: f16[d, d]) {
  return matmul(rms_norm(X), W)
}
)";
inline constexpr const char* kRmsLinear = R"(input X: f16[n, d]
input W: f16[d, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: -, loop: 1}
  w = load W map {grid: 1->g1, loop: 0}
  xw = matmul(x, w)
  acc = sum_accumulate(xw)
  r = rms_accumulate(x, axis=1)
  y = div(acc, r)
  save O: f16 = y map {grid: 1->g1, loop: -}
output O
)";

// silu(X@Wg) * (X@Wu): both matmuls accumulated over the loop in one kernel, the tail after it.
inline constexpr const char* kGatedMlpProgram = R"(program gated_mlp(X: f16[n, d], Wg: f16[d, d], Wu: f16[d, d]) {
  return silu(matmul(X, Wg)) * matmul(X, Wu)
}
)";
inline constexpr const char* kGatedMlp = R"(input X: f16[n, d]
input Wg: f16[d, d]
input Wu: f16[d, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: -, loop: 1}
  wg = load Wg map {grid: 1->g1, loop: 0}
  wu = load Wu map {grid: 1->g1, loop: 0}
  a = matmul(x, wg)
  b = matmul(x, wu)
  ga = sum_accumulate(a)
  ub = sum_accumulate(b)
  s = silu(ga)
  y = mul(s, ub)
  save O: f16 = y map {grid: 1->g1, loop: -}
output O
)";

// The gated MLP with k split across blocks, as a decode step runs it: kernel 0's grid splits d
// (g1) and the output columns (g2), its loop walks each split, every block saves its partial
// products (g1 a leading partial axis); kernel 1 splits the columns (g3), walks the partials with
// its loop, sums them and applies silu(.) * (.).
inline constexpr const char* kGatedMlpSplitK = R"(input X: f16[n, d]
input Wg: f16[d, d]
input Wu: f16[d, d]
kernel 0: custom grid=[g1, g2] loop=F1
  x = load X map {grid: 1->g1, loop: 1}
  wg = load Wg map {grid: 0->g1 1->g2, loop: 0}
  wu = load Wu map {grid: 0->g1 1->g2, loop: 0}
  a = matmul(x, wg)
  b = matmul(x, wu)
  ga = sum_accumulate(a)
  ub = sum_accumulate(b)
  save Pg: f32 = ga map {grid: 1->g2, loop: -}
  save Pu: f32 = ub map {grid: 1->g2, loop: -}
kernel 1: custom grid=[g3] loop=F2
  pg = load Pg map {grid: 2->g3, loop: 0}
  pu = load Pu map {grid: 2->g3, loop: 0}
  sg = sum(pg, axis=0, keepdims=false)
  su = sum(pu, axis=0, keepdims=false)
  cg = sum_accumulate(sg)
  cu = sum_accumulate(su)
  s = silu(cg)
  y = mul(s, cu)
  save O: f16 = y map {grid: 1->g3, loop: -}
output O
)";

// exp(Q@Kt) normalized, @V. Flash-decoding style: g1 splits the batch, g2 splits the key/value
// length s, the loop walks each split; each block saves its partial numerator and denominator
// (g2 is a cross-block reduction: leading partial axis). Kernel 1 walks the g2 partials with its
// loop, sums them and divides.
inline constexpr const char* kAttentionProgram = R"(program attention(Q: f16[B, q, e], Kt: f16[B, e, s], V: f16[B, s, e]) {
  S = exp(matmul(Q, Kt))
  return matmul(S / sum(S, axis=-1), V)
}
)";
inline constexpr const char* kAttention = R"(input Q: f16[B, q, e]
input Kt: f16[B, e, s]
input V: f16[B, s, e]
kernel 0: custom grid=[g1, g2] loop=F1
  qt = load Q map {grid: 0->g1, loop: -}
  kt = load Kt map {grid: 0->g1 2->g2, loop: 2}
  vt = load V map {grid: 0->g1 1->g2, loop: 1}
  st = matmul(qt, kt)
  p = exp(st)
  num = matmul(p, vt)
  den = sum(p, axis=2)
  an = sum_accumulate(num)
  ad = sum_accumulate(den)
  save Pn: f32 = an map {grid: 0->g1, loop: -}
  save Pd: f32 = ad map {grid: 0->g1, loop: -}
kernel 1: custom grid=[g3] loop=F2
  pn = load Pn map {grid: 1->g3, loop: 0}
  pd = load Pd map {grid: 1->g3, loop: 0}
  sn = sum(pn, axis=0, keepdims=false)
  sd = sum(pd, axis=0, keepdims=false)
  n = sum_accumulate(sn)
  d = sum_accumulate(sd)
  o = div(n, d)
  save O: f16 = o map {grid: 0->g3, loop: -}
output O
)";

// X@W + (X@A)@B in one kernel: the grid splits the output columns, the loop walks d
// accumulating X@W and X@A; (X@A)@B happens after the loop with B's column block.
inline constexpr const char* kLoraProgram = R"(program lora(X: f16[n, d], W: f16[d, m], A: f16[d, r], B: f16[r, m]) {
  return matmul(X, W) + matmul(matmul(X, A), B)
}
)";
inline constexpr const char* kLora = R"(input X: f16[n, d]
input W: f16[d, m]
input A: f16[d, r]
input B: f16[r, m]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: -, loop: 1}
  w = load W map {grid: 1->g1, loop: 0}
  a = load A map {grid: -, loop: 0}
  b = load B map {grid: 1->g1, loop: -}
  xw = matmul(x, w)
  xa = matmul(x, a)
  accw = sum_accumulate(xw)
  acca = sum_accumulate(xa)
  xab = matmul(acca, b)
  y = add(accw, xab)
  save O: f16 = y map {grid: 1->g1, loop: -}
output O
)";

// A negative example: g1 splits the contraction dim d of X@W, so each block holds a partial product
// on a partial axis; only a sum over that axis gives the program below.
// Llama's RMSNorm with eps and a gain vector, then nn.Linear's [out, in] weight: g[d] read as
// [1, d] and W[m, d] as W^T by views; eps and d are constants; the loop walks d.
// Rotary embedding (rotate_half by split and concat) with the heads and positions cut across
// the grid; the head dim, which the split and concat move data along, is whole in every tile.
inline constexpr const char* kRotaryProgram = R"(program rotary(X: f32[h, s, e], C: f32[s, e], S: f32[s, e]) {
  X1, X2 = split(X, 2, axis=-1)
  return X * C + concat(-X2, X1, axis=-1) * S
})";
inline constexpr const char* kRotary = R"(input X: f32[h, s, e]
input C: f32[s, e]
input S: f32[s, e]
kernel 0: custom grid=[g1, g2]
  x = load X map {grid: 0->g1 1->g2, loop: -}
  c = load C view [-, 0, 1] map {grid: 1->g2, loop: -}
  sn = load S view [-, 0, 1] map {grid: 1->g2, loop: -}
  x1 = split(x, axis=2, parts=2, index=0)
  x2 = split(x, axis=2, parts=2, index=1)
  n2 = neg(x2)
  r = concat(n2, x1, axis=2)
  xc = mul(x, c)
  rs = mul(r, sn)
  y = add(xc, rs)
  save O: f32 = y map {grid: 0->g1 1->g2, loop: -}
output O
)";

// The halves of each row swapped: split parts read where the load lies, the concat written
// straight into its save's box.
inline constexpr const char* kSwapHalves = R"(input X: f32[n, d]
kernel 0: custom grid=[g1]
  x = load X map {grid: 0->g1, loop: -}
  a = split(x, axis=1, parts=2, index=0)
  b = split(x, axis=1, parts=2, index=1)
  c = concat(b, a, axis=1)
  save O: f32 = c map {grid: 0->g1, loop: -}
output O
)";

// Attention's heads as a model writes them: a projection's rows reshaped into heads (read in
// place: the fused kernel loads Y through the reshape and a transpose, with no copy), the scores
// per head, moved back beside their rows by a save through a view and merged by a reshape read
// in place: no copy kernel at all.
inline constexpr const char* kHeadsInPlace = R"(input X: f32[n, d]
input W: f32[d, h * e]
input K: f32[h, s, e]
input U: f32[h * s, m]
kernel 0: Y: f32 = matmul(X, W)
kernel 1: Q: f32 = reshape(Y, shape=[n, h, e])
kernel 2: custom grid=[g1, g2]
  q = load Q view [1, 0, 2] map {grid: 0->g1 1->g2, loop: -}
  k = load K view [0, 2, 1] map {grid: 0->g1, loop: -}
  p = matmul(q, k)
  save S: f32 = p view [1, 0, 2] map {grid: 0->g1 1->g2, loop: -}
kernel 3: R: f32 = reshape(S, shape=[n, h * s])
kernel 4: O: f32 = matmul(R, U)
output O
)";
inline constexpr const char* kHeadsInPlaceProgram = R"(program heads(X: f32[n, d], W: f32[d, h * e], K: f32[h, s, e], U: f32[h * s, m]) {
  Q = transpose(reshape(matmul(X, W), [n, h, e]), perm=[1, 0, 2])
  return matmul(reshape(transpose(matmul(Q, transpose(K, perm=[0, 2, 1])), perm=[1, 0, 2]), [n, h * s]), U)
})";

inline constexpr const char* kLlamaProgram = R"(program llama(X: f32[n, d], g: f32[d], W: f32[m, d]) {
  return matmul(rms_norm(X, eps=1e-6) * g, transpose(W))
})";
inline constexpr const char* kLlama = R"(input X: f32[n, d]
input g: f32[d]
input W: f32[m, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: -, loop: 1}
  gg = load g view [-, 0] map {grid: -, loop: 1}
  w = load W view [1, 0] map {grid: 1->g1, loop: 0}
  eps = const(1e-06)
  k = const(d)
  xg = mul(x, gg)
  xw = matmul(xg, w)
  acc = sum_accumulate(xw)
  sq = mul(x, x)
  ss = sum(sq, axis=1)
  acs = sum_accumulate(ss)
  ms = div(acs, k)
  me = add(ms, eps)
  r = sqrt(me)
  y = div(acc, r)
  save O: f32 = y map {grid: 1->g1, loop: -}
output O
)";

inline constexpr const char* kSplitContractionProgram = "program p(X: f32[n, d], W: f32[d, m]) {\n  return matmul(X, W)\n}\n";
inline constexpr const char* kSplitContractionPartials = R"(input X: f32[n, d]
input W: f32[d, m]
kernel 0: custom grid=[g1]
  x = load X map {grid: 1->g1, loop: -}
  w = load W map {grid: 0->g1, loop: -}
  y = matmul(x, w)
  save P: f32 = y map {grid: -, loop: -}
)";

// Every elementwise op of the table (ir/ops.h) in both kinds of kernel: a custom kernel applies
// each to loaded tiles walked by the loop and saves O<i>; a library kernel applies it to O<i> (and
// Y) whole, P<i>. Storage `dtype` ("f32", "f16", "bf16") for every tensor.
inline std::string every_elementwise_op_family(const std::string& dtype = "f32") {
  std::string custom = "kernel 0: custom grid=[g1] loop=F1\n  x = load X map {grid: 0->g1, loop: 1}\n  y = load Y map {grid: 0->g1, loop: 1}\n";
  std::string library, outputs;
  int i = 0, k = 1;
  for (const OpInfo& row : op_table()) {
    if ((row.cls != OpClass::Unary && row.cls != OpClass::Binary) || row.op == Op::Cast) continue;  // no cast reaches an sGraph
    const bool binary = row.cls == OpClass::Binary;
    const std::string n = std::to_string(i++), name = row.name;
    custom += "  z" + n + " = " + name + (binary ? "(x, y)\n" : "(x)\n");
    custom += "  save O" + n + ": " + dtype + " = z" + n + " map {grid: 0->g1, loop: 1}\n";
    library += "kernel " + std::to_string(k++) + ": P" + n + ": " + dtype + " = " + name + (binary ? "(O" + n + ", Y)\n" : "(O" + n + ")\n");
    outputs += (outputs.empty() ? "" : ", ") + std::string("O") + n + ", P" + n;
  }
  return "input X: " + dtype + "[n, d]\ninput Y: " + dtype + "[n, d]\n" + custom + library + "output " + outputs + "\n";
}

// softmax(S) @ V by online softmax: the loop walks s, each iteration's rows relative to their
// own max; the row sums and the output rescaled to the running max; the division after the loop.
inline constexpr const char* kOnlineSoftmaxProgram = R"(program online(S: f32[n, s], V: f32[s, e]) {
  return matmul(softmax(S), V)
}
)";
inline constexpr const char* kOnlineSoftmax = R"(input S: f32[n, s]
input V: f32[s, e]
kernel 0: custom grid=[g1] loop=F1
  x = load S map {grid: 0->g1, loop: 1}
  v = load V map {grid: -, loop: 0}
  m = max(x, axis=1)
  am = max_accumulate(m)
  d = sub(x, m)
  p = exp(d)
  l = sum(p, axis=1)
  al = rescaled_sum_accumulate(l, m)
  o = matmul(p, v)
  ao = rescaled_sum_accumulate(o, m)
  r = div(ao, al)
  save O: f32 = r map {grid: 0->g1, loop: -}
output O
)";

}  // namespace prism::test::families
