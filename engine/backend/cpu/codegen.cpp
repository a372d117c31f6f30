#include "engine/backend/cpu/codegen.h"

#include "engine/backend/cpu/amx_kernel.h"

#include <algorithm>
#include <map>

#include "engine/backend/cpu/amx_kernel.h"
#include "engine/backend/cpu/emit_ops.h"
#include "engine/backend/cpu/fuse_squares.h"
#include "engine/backend/cpu/parallel_grain.h"
#include "engine/backend/cpu/storage_types.h"
#include "engine/backend/c_expr.h"
#include "engine/backend/lower.h"
#include "engine/backend/statement_walk.h"
#include "engine/error.h"
#include "engine/ir/shape.h"

namespace prism::backend::cpu {

using namespace detail;

namespace {

std::string num(int64_t v) { return std::to_string(v) + "L"; }

std::string var(size_t tensor) { return std::string("t").append(std::to_string(tensor)); }

// Prints the kernel IR's statements: a place is a view of a tile ("v3", in the block's scratch),
// of a tensor box ("(t1 + b0 * 64L)") or of a load bound to a pointer ("v1").
class Printer {
 public:
  // The shared walk over a statement's kinds calls the members that print each (statement_walk.h).
  template <class P, class C>
  friend std::string prism::backend::walk_statement(P& p, const kir::Stmt& s, const C& ctx, const std::string& f);

  Printer(const kir::Program& p, const CodegenOptions& o) : p_(p), options_(o) {
    for (const kir::Tensor& t : p_.tensors) working_set_bytes_ += t.bytes();
  }

  View view(const kir::Place& place, const std::string& f) const {
    switch (place.kind) {
      case kir::Place::Kind::Tile:
      case kir::Place::Kind::Bound: {
        auto dtype = value_dtypes_.find(place.value);
        return shifted(View{"v" + std::to_string(place.value), place.shape, place.strides, dtype == value_dtypes_.end() ? DType::F32 : dtype->second},
                       place.start);
      }
      case kir::Place::Kind::Tensor: break;
    }
    const std::string t = var(p_.index(place.tensor)), off = offset_text(place.offset, f, "L");
    return shifted(View{off == "0" ? t : "(" + t + " + " + off + ")", place.shape, place.strides, p_.tensor(place.tensor).dtype}, place.start);
  }

  std::string statement(const kir::Stmt& s, const EmitContext& ctx, const std::string& f) const { return walk_statement(*this, s, ctx, f); }

  // How each kind of statement prints (statement_walk.h walks them).
  std::string stage(const kir::Stmt&, const View& x, const View& out, const EmitContext& ctx) const {
    return emit_copy(x, out, ctx);  // a view the printers cannot read in place (W^T)
  }
  std::string save(const View& x, const View& out, const EmitContext& ctx) const { return emit_copy(x, out, ctx); }
  [[noreturn]] std::string bound() const { throw Error(Error::Kind::InvalidArgument, "codegen: a bound load is a declaration, not a statement"); }
  std::string unary(const kir::Stmt& s, const View& x, const View& out, const EmitContext& ctx) const { return emit_unary(s.op, x, out, ctx); }
  std::string binary(const kir::Stmt& s, const View& a, const View& b, const View& out, const EmitContext& ctx) const {
    if (s.finite_shift) return emit_zip(a, b, out, finite_shift, ctx);
    return emit_binary(s.op, a, b, out, ctx);
  }
  std::string matmul(const kir::Stmt& s, const View& a, const View& b, const View& out, const EmitContext& ctx) const {
    return emit_matmul(a, b, out, s.into_accumulator, ctx);
  }
  std::string constant(const kir::Stmt& s, const View& out, const EmitContext& ctx) const {
    return ctx.indent + out.ptr + "[0] = " + float_literal(s.constant) + ";\n";
  }
  std::string concat(const kir::Stmt& s, const std::vector<View>& ins, const View& out, const EmitContext& ctx) const {
    std::string code;
    for (const auto& [from, to] : concat_moves(s.axis, ins, out)) code += emit_copy(from, to, ctx);
    return code;
  }
  std::string reduce(const kir::Stmt& s, const View& x, const View& out, const EmitContext& ctx) const {
    if (s.squares) return emit_square_sum_into(s.axis, x, out, ctx, false);
    return emit_reduce(s.op, s.axis, x, out, ctx);
  }
  std::string accumulate_sum(const View& x, const View& out, const EmitContext& ctx) const { return emit_binary(Op::Add, out, x, out, ctx); }
  std::string accumulate_max(const View& x, const View& out, const EmitContext& ctx) const {
    return emit_zip(
        out, x, out, [](const std::string& a, const std::string& b) { return "prism_max_into(" + a + ", " + b + ")"; }, ctx);
  }
  std::string accumulate_rms(const kir::Stmt& s, const View& x, const View& out, const EmitContext& ctx) const {
    return emit_square_sum_into(s.axis, x, out, ctx);
  }

  // x - m with an m of -inf read as 0 (docs/sgraph.md, "Masked pieces").
  static std::string finite_shift(const std::string& x, const std::string& m) { return x + " - prism_finite_max(" + m + ")"; }

  // Online softmax's accumulator (kernel_ir.h): the factors from the old running max, the max
  // updated, then out = out * keep + x * take.
  static std::string rescaled(const View& x, const View& m, const View& run, const View& keep, const View& take, const View& out,
                              const EmitContext& ctx) {
    auto call = [](const char* fn) {
      return [fn](const std::vector<std::string>& a) { return std::string(fn) + "(" + a[0] + ", " + a[1] + ")"; };
    };
    return emit_zip_n({run, m}, keep, call("prism_rescale"), ctx) + emit_zip_n({m, run}, take, call("prism_rescale"), ctx) +
           emit_zip_n({run, m}, run, call("prism_max_into"), ctx) +
           emit_zip_n({out, x, keep, take}, out, [](const std::vector<std::string>& a) { return a[0] + " * " + a[2] + " + " + a[1] + " * " + a[3]; }, ctx);
  }

  // The statements of one phase; `f` is the loop index ("0" outside the loop).
  std::string phase(const std::vector<kir::Stmt>& stmts, const std::string& ind, const std::string& f, int64_t loop) const {
    std::string s;
    EmitContext ctx;
    ctx.indent = ind + "  ";
    ctx.simd_bytes = options_.simd_bytes;
    const std::string next_f = "(" + f + " + 1 < " + num(loop) + " ? " + f + " + 1 : " + f + ")";
    for (const kir::Stmt& st : stmts) {
      ctx.prefetch_after = st.next_b ? view(*st.next_b, st.next_iteration ? next_f : f).ptr : "";
      if (st.kind == kir::Stmt::Kind::Bind) {  // a declaration, visible to the later phases
        s += ind + "const " + storage_type_name(p_.tensor(st.out.tensor).dtype) + "* const v" + std::to_string(st.value) + " = " + view(st.out, f).ptr +
             ";  // " + st.label + "\n";
        continue;
      }
      s += ind + "{  // " + st.name + "\n" + statement(st, ctx, f) + ind + "}\n";
    }
    return s;
  }

  // Declarations of the device tensors a kernel reads or writes, in index order.
  std::string tensors(const kir::Kernel& k) const {
    std::string s;
    for (size_t t : kir::kernel_tensors(p_, k)) {
      const std::string ty = storage_type_name(p_.tensors[t].dtype);
      s += "  " + ty + "* __restrict " + var(t) + " = static_cast<" + ty + "*>(T[" + std::to_string(t) + "]);\n";
    }
    return s;
  }

  std::string custom(const std::string& fn, const kir::Kernel& kernel) {
    const kir::CustomKernel& k = kernel.block;
    value_dtypes_ = kir::block_value_dtypes(p_, k);
    std::string s = "static void " + fn + "(int threads) {\n" + tensors(kernel);
    // Below the grain the blocks run on the calling thread (parallel_grain.h).
    const int64_t work = kernel_work(k);
    if (!options_.grain || above_grain(double(work), false)) s += "#pragma omp parallel for num_threads(threads) schedule(static)\n";
    else s += "  (void)threads;  // " + num(work) + " element operations: below the grain, one thread\n";
    s += "  for (long blk = 0; blk < " + num(k.blocks()) + "; ++blk) {\n";
    int64_t inner = 1;
    for (size_t gi = k.grid.size(); gi-- > 0;) {
      s += "    const long b" + std::to_string(gi) + " = blk / " + num(inner) + " % " + num(k.grid[gi]) + ";\n";
      inner *= k.grid[gi];
    }
    if (k.fast_memory_bytes > 0) {
      s += "    float* const S = prism_scratch(" + std::to_string(k.fast_memory_bytes / 4) + ");\n";
      s += "    if (!S) { prism_failed = 1; continue; }\n";
    }
    std::vector<kir::Tile> tiles = k.tiles;
    std::sort(tiles.begin(), tiles.end(), [](const kir::Tile& a, const kir::Tile& b) { return a.value < b.value; });
    for (const kir::Tile& t : tiles) {
      const std::string ty = storage_type_name(t.storage), at = "S + " + std::to_string(t.offset_bytes / 4);
      s += "    " + ty + "* const v" + std::to_string(t.value) + " = " + (t.storage == DType::F32 ? at : "reinterpret_cast<" + ty + "*>(" + at + ")") +
           ";\n";
    }
    for (const kir::Accumulator& a : k.accumulators) {
      std::string init = a.acc == sgraph::AccKind::Max ? "-__builtin_inff()" : "0.0f";
      s += "    for (long e = 0; e < " + num(a.elements) + "; ++e) v" + std::to_string(a.value) + "[e] = " + init + ";\n";
    }
    s += phase(k.before, "    ", "0", k.loop);
    if (k.loop > 1) s += "    for (long f = 0; f < " + num(k.loop) + "; ++f) {\n" + phase(k.body, "      ", "f", k.loop) + "    }\n";
    else s += "    {\n" + phase(k.body, "      ", "0", k.loop) + "    }\n";
    for (const kir::Accumulator& a : k.accumulators) {
      if (a.acc != sgraph::AccKind::Rms) continue;
      const std::string v = "v" + std::to_string(a.value);
      s += "    for (long e = 0; e < " + num(a.elements) + "; ++e) " + v + "[e] = __builtin_sqrtf(" + v + "[e] / float(" +
           std::to_string(a.count) + "));\n";
    }
    s += phase(k.after, "    ", "0", k.loop);
    return s + "  }\n}\n";
  }

  // A library kernel: parallel loop nests (or the micro-kernel) over whole tensors.
  std::string library(const std::string& fn, const kir::Kernel& kernel) {
    value_dtypes_.clear();
    EmitContext ctx;
    ctx.parallel = true;
    ctx.grain = options_.grain;
    ctx.simd_bytes = options_.simd_bytes;
    ctx.cores = std::max(1, options_.cores);
    ctx.cache_bytes = options_.cache_bytes;
    ctx.working_set_bytes = working_set_bytes_;
    const kir::Stmt& s = kernel.library;
    std::string body = s.op == Op::Matmul ? emit_vendor_matmul(view(s.in.at(0), "0"), view(s.in.at(1), "0"), view(s.out, "0"), ctx) : "";
    if (body.empty()) body = statement(s, ctx, "0");
    return "static void " + fn + "(int threads) {\n" + tensors(kernel) + "  (void)threads;\n" + body + "}\n";
  }

  // The entry: inputs and outputs are the caller's; every other device tensor is a static buffer.
  // prism_entry_kernels runs a range of the kernels (abi.h: what a per-kernel breakdown times);
  // prism_entry runs them all.
  std::string entry() const {
    const std::string n = std::to_string(p_.kernels.size());
    std::string s = "extern \"C\" int prism_kernel_count(void) { return " + n + "; }\n\n";
    s += "static void (*const prism_kernels[])(int) = {";
    for (size_t k = 0; k < p_.kernels.size(); ++k) s += (k ? ", kernel_" : "kernel_") + std::to_string(k);
    s += std::string(p_.kernels.empty() ? "nullptr" : "") + "};\n\n";
    s += "extern \"C\" int prism_entry_kernels(const void* const* inputs, void* const* outputs, int threads, int first, int last) {\n";
    s += "  if (threads < 1) threads = 1;\n  prism_failed = 0;\n";
    auto slot_of = [&](const std::string& name) {
      return size_t(std::find(p_.outputs.begin(), p_.outputs.end(), name) - p_.outputs.begin());
    };
    for (size_t i = 0; i < p_.tensors.size(); ++i) {
      const kir::Tensor& t = p_.tensors[i];
      std::string ti = "T[" + std::to_string(i) + "]", comment = "  // " + t.name + "\n";
      const size_t slot = slot_of(t.name);
      if (i < p_.inputs) {
        s += "  " + ti + " = const_cast<void*>(inputs[" + std::to_string(i) + "]);" + comment;
      } else if (slot < p_.outputs.size()) {
        s += "  " + ti + " = outputs[" + std::to_string(slot) + "];" + comment;
      } else {
        s += "  {\n    static void* buffer = nullptr;\n";
        s += "    if (!buffer) buffer = aligned_alloc(64, " + std::to_string((t.bytes() + 63) / 64 * 64) + ");\n";
        s += "    if (!buffer) { prism_message = \"out of memory for a device tensor\"; return 1; }\n";
        s += "    " + ti + " = buffer;" + comment + "  }\n";
      }
    }
    s += "  for (int k = first < 0 ? 0 : first; k < last && k < " + n + "; ++k) prism_kernels[k](threads);\n";
    // An output that is an input, or returned twice, is copied into its slot, after the last kernel.
    std::string copies;
    for (size_t o = 0; o < p_.outputs.size(); ++o) {
      const size_t i = p_.index(p_.outputs[o]);
      if (i < p_.inputs || slot_of(p_.outputs[o]) != o)
        copies += "    memcpy(outputs[" + std::to_string(o) + "], T[" + std::to_string(i) + "], " + std::to_string(p_.tensors[i].bytes()) + ");\n";
    }
    if (!copies.empty()) s += "  if (last >= " + n + ") {\n" + copies + "  }\n";
    s += "  if (prism_failed) { prism_message = \"out of memory for a block's scratch\"; return 1; }\n";
    s += "  return 0;\n}\n\n";
    s += "extern \"C\" int prism_entry(const void* const* inputs, void* const* outputs, int threads) {\n";
    s += "  return prism_entry_kernels(inputs, outputs, threads, 0, " + n + ");\n}\n\n";
    return s + "extern \"C\" const char* prism_error(void) { return prism_message; }\n";
  }

 private:
  const kir::Program& p_;
  const CodegenOptions& options_;
  int64_t working_set_bytes_ = 0;      // every device tensor together (EmitContext::working_set_bytes)
  std::map<int, DType> value_dtypes_;  // of the kernel being printed
};

}  // namespace

std::string generate_cpu_source(const kir::Program& program, const CodegenOptions& options) {
  Printer printer(program, options);
  std::string s = prelude(options.simd_bytes, options.amx);
  s += "\nstatic void* T[" + std::to_string(std::max<size_t>(1, program.tensors.size())) + "];  // device tensors, at their dtypes\n";
  s += "static int prism_failed = 0;\nstatic const char* prism_message = \"\";\n\n";
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const std::string fn = "kernel_" + std::to_string(k);
    s += (program.kernels[k].custom ? printer.custom(fn, program.kernels[k]) : printer.library(fn, program.kernels[k])) + "\n";
  }
  return s + printer.entry();
}

kir::Program cpu_kernel_ir(const sgraph::Instance& instance, const CodegenOptions& options) {
  if (options.simd_bytes != 32 && options.simd_bytes != 64)
    throw Error(Error::Kind::InvalidArgument, "codegen: simd_bytes must be 32 or 64, not " + std::to_string(options.simd_bytes));
  LowerOptions lowering = cpu_lowering();
  if (options.amx && options.simd_bytes == 64)  // the NT kernel on the tiles takes any rows of A
    lowering.transposed_b_any_rows = [](DType a, DType b, int64_t rows) { return detail::amx_matmul(a, b, rows, true); };
  kir::Program program = lower(instance, lowering);
  fuse_squares(program);
  return program;
}

std::string generate_cpu_source(const sgraph::Instance& instance, const CodegenOptions& options) {
  return generate_cpu_source(cpu_kernel_ir(instance, options), options);
}

}  // namespace prism::backend::cpu
