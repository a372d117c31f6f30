#include "engine/interp/interpreter.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "engine/error.h"
#include "engine/interp/half.h"
#include "engine/ir/input_domains.h"
#include "engine/ir/visitor.h"

namespace prism {

namespace {

constexpr int64_t kChunk = int64_t(1) << 16;  // elements between cancellation polls

// The broadcast of two operand shapes; throws Error{InvalidArgument} naming the op.
std::vector<int64_t> broadcast_or_throw(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const char* op) {
  if (auto out = broadcast_shape(a, b)) return *out;
  throw Error(Error::Kind::InvalidArgument, std::string(op) + ": shapes " + shape_text(a) + " and " + shape_text(b) + " cannot broadcast");
}

// Calls fn(out_index, a_offset, b_offset) for every element of the broadcast result.
template <typename Fn>
void for_each_broadcast(const std::vector<int64_t>& out_shape, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb,
                        const CancelToken* cancel, Fn fn) {
  size_t rank = out_shape.size();
  int64_t total = checked_element_count(out_shape);
  if (total == 0) return;
  std::vector<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < total; ++i) {
    if (cancel && (i % kChunk) == 0) cancel->check();
    fn(i, oa, ob);
    for (size_t d = rank; d-- > 0;) {  // odometer increment
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < out_shape[d]) break;
      oa -= sa[d] * out_shape[d];
      ob -= sb[d] * out_shape[d];
      idx[d] = 0;
    }
  }
}

// A sum accumulated in double keeps f32's range: a partial sum past it is the infinity an f32
// accumulator would hold, so a wider accumulator never hides an overflow every f32 program has.
template <typename Acc>
Acc in_f32_range(Acc x) {
  if constexpr (std::is_same_v<Acc, double>)
    if (std::fabs(x) > double(std::numeric_limits<float>::max())) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return x;
}

class Interpreter : public Visitor {
 public:
  enum class Mode { Plain, Moved, ExactSums, KernelSums };
  Interpreter(const Program& p, const DimBindings& b, const std::map<std::string, Tensor>& in, const CancelToken* c, Mode mode = Mode::Plain,
              std::vector<float> steps = {}, uint64_t pattern = 0)
      : p_(p), bindings_(b), inputs_(in), cancel_(c), mode_(mode), steps_(std::move(steps)), values_(p.values.size()),
        last_use_(p.values.size(), -1), move_state_(0x9e3779b97f4a7c15ull + pattern * 0x632be59bd9b4e019ull) {
    for (const auto& v : p.values)
      for (int o : v.operands) last_use_[size_t(o)] = v.id;
    for (int o : p.outputs) last_use_[size_t(o)] = int(p.values.size());
  }

  std::vector<Tensor> run() {
    for (const auto& v : p_.values) {
      poll();
      dispatch(v);
      if (mode_ == Mode::Moved) move(values_[size_t(v.id)], steps_.at(size_t(v.id)));
      release_dead_operands(v);
    }
    std::vector<Tensor> out;
    for (int o : p_.outputs) out.push_back(values_[size_t(o)]);
    return out;
  }

 protected:
  void visit_default(const Value& v) override {
    throw Error(Error::Kind::Failed, std::string("interpreter: '") + op_name(v.op) + "' must be lowered first (lower_composites)");
  }

  void visit_input(const Value& v) override {
    auto it = inputs_.find(v.name);
    if (it == inputs_.end()) throw Error(Error::Kind::InvalidArgument, "no tensor given for input '" + v.name + "'");
    std::vector<int64_t> want = shape_of(v);
    if (it->second.shape != want)
      throw Error(Error::Kind::InvalidArgument, "input '" + v.name + "' has shape " + shape_text(it->second.shape) +
                                                    " but the program expects " + shape_str(v.type.shape) + " = " + shape_text(want));
    Tensor t = it->second;
    if (t.dtype != v.type.dtype) {
      round_all(v.type.dtype, t.data.data(), t.data.size());
      t.dtype = v.type.dtype;
    }
    set(v, std::move(t));
  }

  void visit_const(const Value& v) override {
    Tensor t = Tensor::zeros(DType::F32, {});
    t.data[0] = float(v.attrs.constant.value(bindings_));
    set(v, std::move(t));
  }


  // Elementwise ops compute the op table's reference formula (ir/ops.h) on every element.
  void visit_unary(const Value& v) override {
    float (*f)(float) = op_info(v.op).unary;
    if (!f) visit_default(v);
    const Tensor& x = arg(v, 0);
    Tensor out = Tensor::zeros(v.type.dtype, x.shape);
    map(x, out, f);
    finish(v, std::move(out));
  }

  void visit_binary(const Value& v) override {
    float (*f)(float, float) = op_info(v.op).binary;
    if (!f) visit_default(v);
    const Tensor& a = arg(v, 0);
    const Tensor& b = arg(v, 1);
    std::vector<int64_t> shape = broadcast_or_throw(a.shape, b.shape, op_name(v.op));
    Tensor out = Tensor::zeros(v.type.dtype, shape);
    zip(a, b, out, f);
    finish(v, std::move(out));
  }

  void visit_matmul(const Value& v) override {
    const Tensor& a = arg(v, 0);
    const Tensor& b = arg(v, 1);
    size_t ra = a.shape.size(), rb = b.shape.size();
    int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
    if (b.shape[rb - 2] != k)
      throw Error(Error::Kind::InvalidArgument, "matmul: inner sizes " + std::to_string(k) + " and " + std::to_string(b.shape[rb - 2]) + " differ");
    std::vector<int64_t> batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
    std::vector<int64_t> batch = broadcast_or_throw(batch_a, batch_b, "matmul");
    std::vector<int64_t> shape = batch;
    shape.push_back(m);
    shape.push_back(n);
    Tensor out = Tensor::zeros(v.type.dtype, shape);
    std::vector<int64_t> sa = broadcast_strides(batch_a, batch), sb = broadcast_strides(batch_b, batch);
    for_each_broadcast(batch, sa, sb, cancel_, [&](int64_t bi, int64_t oa, int64_t ob) {
      matmul_2d(a.data.data() + oa * m * k, b.data.data() + ob * k * n, out.data.data() + bi * m * n, m, k, n);
    });
    finish(v, std::move(out));
  }

  void visit_reduce(const Value& v) override {
    if (v.op != Op::Sum && v.op != Op::Max && v.op != Op::Rms) visit_default(v);
    const Tensor& x = arg(v, 0);
    size_t axis = size_t(v.attrs.axis);
    int64_t outer = 1, inner = 1, k = x.shape[axis];
    for (size_t i = 0; i < axis; ++i) outer *= x.shape[i];
    for (size_t i = axis + 1; i < x.shape.size(); ++i) inner *= x.shape[i];
    std::vector<int64_t> shape = x.shape;
    if (v.attrs.keepdims) shape[axis] = 1;
    else shape.erase(shape.begin() + long(axis));
    Tensor out = Tensor::zeros(v.type.dtype, shape);
    const float* src = x.data.data();
    float* dst = out.data.data();
    if (v.op == Op::Max) reduce_rows<float>(src, dst, outer, k, inner, Op::Max);
    else if (mode_ == Mode::KernelSums) reduce_rows<float>(src, dst, outer, k, inner, v.op);
    else reduce_rows<double>(src, dst, outer, k, inner, v.op);
    finish(v, std::move(out));
  }

  // dst[o, i] = the reduction of src[o, :, i] over its k rows, accumulated in Acc.
  template <typename Acc>
  void reduce_rows(const float* src, float* dst, int64_t outer, int64_t k, int64_t inner, Op op) {
    const bool is_max = op == Op::Max, is_rms = op == Op::Rms;
    std::vector<Acc> acc(static_cast<size_t>(inner));
    for (int64_t o = 0; o < outer; ++o) {
      poll();
      std::fill(acc.begin(), acc.end(), is_max ? -std::numeric_limits<Acc>::infinity() : Acc(0));
      for (int64_t j = 0; j < k; ++j) {
        const float* row = src + (o * k + j) * inner;
        if (is_max) {
          for (int64_t i = 0; i < inner; ++i)
            if (row[i] > acc[size_t(i)] || std::isnan(row[i])) acc[size_t(i)] = std::isnan(acc[size_t(i)]) ? acc[size_t(i)] : row[i];
        } else if (is_rms) {
          for (int64_t i = 0; i < inner; ++i) acc[size_t(i)] = in_f32_range(acc[size_t(i)] + Acc(row[i]) * Acc(row[i]));
        } else {
          for (int64_t i = 0; i < inner; ++i) acc[size_t(i)] = in_f32_range(acc[size_t(i)] + Acc(row[i]));
        }
      }
      for (int64_t i = 0; i < inner; ++i) dst[o * inner + i] = float(is_rms ? std::sqrt(acc[size_t(i)] / Acc(k)) : acc[size_t(i)]);
    }
  }

  void visit_transpose(const Value& v) override {
    const Tensor& x = arg(v, 0);
    size_t rank = x.shape.size();
    std::vector<int64_t> in_strides(rank), shape(rank), strides(rank);
    int64_t s = 1;
    for (size_t i = rank; i-- > 0;) {
      in_strides[i] = s;
      s *= x.shape[i];
    }
    for (size_t i = 0; i < rank; ++i) {
      shape[i] = x.shape[size_t(v.attrs.perm[i])];
      strides[i] = in_strides[size_t(v.attrs.perm[i])];
    }
    Tensor out = Tensor::zeros(v.type.dtype, shape);
    std::vector<int64_t> zero(rank, 0);
    for_each_broadcast(shape, strides, zero, cancel_, [&](int64_t i, int64_t off, int64_t) { out.data[size_t(i)] = x.data[size_t(off)]; });
    finish(v, std::move(out));
  }

  void visit_reshape(const Value& v) override {
    const Tensor& x = arg(v, 0);
    std::vector<int64_t> shape = shape_of(v);
    if (checked_element_count(shape) != x.size())
      throw Error(Error::Kind::InvalidArgument, "reshape: cannot reshape " + shape_text(x.shape) + " (" + std::to_string(x.size()) +
                                                    " elements) into " + shape_str(v.type.shape) + " = " + shape_text(shape));
    Tensor out = x;
    out.shape = shape;
    out.dtype = v.type.dtype;
    finish(v, std::move(out));
  }

  void visit_concat(const Value& v) override {
    size_t axis = size_t(v.attrs.axis);
    std::vector<int64_t> shape = arg(v, 0).shape;
    shape[axis] = 0;
    for (size_t i = 0; i < v.operands.size(); ++i) shape[axis] += arg(v, i).shape[axis];
    Tensor out = Tensor::zeros(v.type.dtype, shape);
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= shape[i];
    for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
    float* dst = out.data.data();
    for (int64_t o = 0; o < outer; ++o) {
      poll();
      for (size_t i = 0; i < v.operands.size(); ++i) {
        const Tensor& x = arg(v, i);
        int64_t chunk = x.shape[axis] * inner;
        std::copy_n(x.data.data() + o * chunk, chunk, dst);
        dst += chunk;
      }
    }
    finish(v, std::move(out));
  }

  void visit_split(const Value& v) override {
    const Tensor& x = arg(v, 0);
    size_t axis = size_t(v.attrs.axis);
    std::vector<int64_t> shape = shape_of(v);
    if (shape[axis] * v.attrs.parts != x.shape[axis])
      throw Error(Error::Kind::InvalidArgument, "split: size " + std::to_string(x.shape[axis]) + " does not split into " +
                                                    std::to_string(v.attrs.parts) + " parts");
    Tensor out = Tensor::zeros(v.type.dtype, shape);
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= shape[i];
    for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
    int64_t part = shape[axis] * inner, whole = x.shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      poll();
      std::copy_n(x.data.data() + o * whole + v.attrs.index * part, part, out.data.data() + o * part);
    }
    finish(v, std::move(out));
  }

 private:
  void poll() const {
    if (cancel_) cancel_->check();
  }

  std::vector<int64_t> shape_of(const Value& v) const { return concrete_shape(v.type.shape, bindings_); }
  const Tensor& arg(const Value& v, size_t i) const { return values_[size_t(v.operands.at(i))]; }
  void set(const Value& v, Tensor t) { values_[size_t(v.id)] = std::move(t); }

  // Rounds to the value's dtype and checks the shape against the symbolic one.
  void finish(const Value& v, Tensor t) {
    std::vector<int64_t> want = shape_of(v);
    if (t.shape != want)
      throw Error(Error::Kind::InvalidArgument, std::string(op_name(v.op)) + " '" + v.name + "': computed shape " + shape_text(t.shape) +
                                                    " but " + shape_str(v.type.shape) + " = " + shape_text(want));
    round_all(t.dtype, t.data.data(), t.data.size());
    set(v, std::move(t));
  }

  void release_dead_operands(const Value& v) {
    for (int o : v.operands)
      if (last_use_[size_t(o)] == v.id) values_[size_t(o)] = Tensor{};
  }

  template <typename F>
  void map(const Tensor& x, Tensor& out, F f) {
    int64_t n = x.size();
    for (int64_t start = 0; start < n; start += kChunk) {
      poll();
      int64_t end = std::min(n, start + kChunk);
      for (int64_t i = start; i < end; ++i) out.data[size_t(i)] = f(x.data[size_t(i)]);
    }
  }

  template <typename F>
  void zip(const Tensor& a, const Tensor& b, Tensor& out, F f) {
    if (a.shape == b.shape) {
      int64_t n = a.size();
      for (int64_t start = 0; start < n; start += kChunk) {
        poll();
        int64_t end = std::min(n, start + kChunk);
        for (int64_t i = start; i < end; ++i) out.data[size_t(i)] = f(a.data[size_t(i)], b.data[size_t(i)]);
      }
      return;
    }
    std::vector<int64_t> sa = broadcast_strides(a.shape, out.shape), sb = broadcast_strides(b.shape, out.shape);
    const float* pa = a.data.data();
    const float* pb = b.data.data();
    float* po = out.data.data();
    for_each_broadcast(out.shape, sa, sb, cancel_, [&](int64_t i, int64_t oa, int64_t ob) { po[i] = f(pa[oa], pb[ob]); });
  }

  // c[m, n] = a[m, k] @ b[k, n], i-k-j order so the inner loop streams rows of b and c; rows run
  // in parallel. Accumulates in f32; the caller rounds once.
  // With exact sums, in double (then rounded to f32 once).
  void matmul_2d(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
    auto rows = [&](const tbb::blocked_range<int64_t>& r) {
      const bool exact = mode_ == Mode::ExactSums;
      std::vector<double> wide(exact ? size_t(n) : 0);
      for (int64_t i = r.begin(); i < r.end(); ++i) {
        poll();
        float* ci = c + i * n;
        if (exact) {
          std::fill(wide.begin(), wide.end(), 0.0);
          for (int64_t p = 0; p < k; ++p) {
            const double aip = a[i * k + p];
            const float* bp = b + p * n;
            for (int64_t j = 0; j < n; ++j) wide[size_t(j)] = in_f32_range(wide[size_t(j)] + aip * double(bp[j]));
          }
          for (int64_t j = 0; j < n; ++j) ci[j] = float(wide[size_t(j)]);
          continue;
        }
        for (int64_t p = 0; p < k; ++p) {
          float aip = a[i * k + p];
          const float* bp = b + p * n;
          for (int64_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
        }
      }
    };
    if (m * k * n < (int64_t(1) << 18)) rows(tbb::blocked_range<int64_t>(0, m));
    else tbb::parallel_for(tbb::blocked_range<int64_t>(0, m), rows);
  }

  const Program& p_;
  const DimBindings& bindings_;
  const std::map<std::string, Tensor>& inputs_;
  const CancelToken* cancel_;
  const Mode mode_;
  const std::vector<float> steps_;  // interpret_moved's, per value
  std::vector<Tensor> values_;
  std::vector<int> last_use_;

  // interpret_moved: each element times 1 ± step, the sign from one LCG over every value in order.
  void move(Tensor& t, float step) {
    for (float& x : t.data) {
      move_state_ = move_state_ * 6364136223846793005ull + 1442695040888963407ull;
      x *= (move_state_ >> 63) ? 1 + step : 1 - step;
    }
  }
  uint64_t move_state_;
};

}  // namespace

void draw_inputs(const Program& program, const DimBindings& dims, uint64_t seed, std::map<std::string, Tensor>& named) {
  const std::vector<Domain> domains = input_domains(program);
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const Value& v = program.value(program.inputs[i]);
    if (!named.count(v.name)) named[v.name] = random_tensor(v.type.dtype, concrete_shape(v.type.shape, dims), seed, v.name, domains[i]);
  }
}

std::vector<Tensor> random_inputs(const Program& program, const DimBindings& dims, uint64_t seed, std::map<std::string, Tensor>* by_name) {
  std::map<std::string, Tensor> named;
  draw_inputs(program, dims, seed, named);
  std::vector<Tensor> inputs;
  for (int id : program.inputs) inputs.push_back(named.at(program.value(id).name));
  if (by_name) *by_name = std::move(named);
  return inputs;
}

std::vector<Tensor> interpret(const Program& lowered, const DimBindings& bindings, const std::map<std::string, Tensor>& inputs,
                              const CancelToken* cancel) {
  return Interpreter(lowered, bindings, inputs, cancel).run();
}

std::vector<Tensor> interpret_moved(const Program& lowered, const DimBindings& bindings, const std::map<std::string, Tensor>& inputs,
                                    const std::vector<float>& steps, uint64_t pattern, const CancelToken* cancel) {
  if (steps.size() != lowered.values.size())
    throw Error(Error::Kind::InvalidArgument, "interpret_moved: " + std::to_string(steps.size()) + " steps for " +
                                                  std::to_string(lowered.values.size()) + " values");
  return Interpreter(lowered, bindings, inputs, cancel, Interpreter::Mode::Moved, steps, pattern).run();
}

std::vector<float> rounding_steps(const Program& declared, float others) {
  std::vector<float> steps(declared.values.size(), others);
  for (const Value& v : declared.values)
    if (v.op != Op::Input && v.op != Op::Const && v.type.dtype != DType::F32)
      steps[size_t(v.id)] = std::max(others, float(unit_roundoff(v.type.dtype)));
  return steps;
}

std::vector<Tensor> interpret_exact_sums(const Program& lowered, const DimBindings& bindings, const std::map<std::string, Tensor>& inputs,
                                         const CancelToken* cancel) {
  return Interpreter(lowered, bindings, inputs, cancel, Interpreter::Mode::ExactSums).run();
}

std::vector<Tensor> interpret_as_kernels(const Program& lowered, const DimBindings& bindings, const std::map<std::string, Tensor>& inputs,
                                         const CancelToken* cancel) {
  return Interpreter(lowered, bindings, inputs, cancel, Interpreter::Mode::KernelSums).run();
}

}  // namespace prism
