#include "engine/ir/lower_composites.h"

#include <set>

#include "engine/error.h"
#include "engine/ir/decimal.h"
#include "engine/ir/edit_program.h"
#include "engine/ir/infer_shapes.h"
#include "engine/ir/visitor.h"

namespace prism {

namespace {

class Lowering : public Visitor {
 public:
  explicit Lowering(const Program& src) : src_(src) {
    out_.name = src.name;
    out_.file = src.file;
    out_.pos = src.pos;
    out_.dims = src.dims;
    for (const auto& v : src.values) taken_.insert(v.name);
    taken_.insert(src.dims.begin(), src.dims.end());
  }

  Program run() {
    visit(src_);
    for (int id : src_.inputs) out_.inputs.push_back(map_.at(size_t(id)));
    for (int id : src_.outputs) out_.outputs.push_back(map_.at(size_t(id)));
    for (auto& v : out_.values)
      if (v.name.empty() && v.op != Op::Const) v.name = fresh();
    return std::move(out_);
  }

 protected:
  // Primitives are copied with their operands renumbered.
  void visit_default(const Value& v) override {
    Value copy = v;
    copy.id = int(out_.values.size());
    for (int& o : copy.operands) o = map_.at(size_t(o));
    out_.values.push_back(std::move(copy));
    map_.push_back(out_.values.back().id);
  }

  // A 16-bit operand is widened first and only the result rounded to its dtype, as PyTorch
  // computes these (README, "The language": 16-bit statistics are f32).
  void visit_composite(const Value& v) override {
    int x = map_.at(size_t(v.operands.at(0)));
    const DType dtype = out_.value(x).type.dtype;
    const bool widen = dtype != DType::F32 && !out_.value(x).type.weak;
    if (widen) x = cast(x, DType::F32, v.pos);
    int result = -1;
    switch (v.op) {
      case Op::Mean: result = mean(x, v.attrs.axis, v.attrs.keepdims, v.pos); break;
      case Op::RmsNorm:
        if (!v.attrs.eps) {
          result = emit(Op::Div, {x, reduce(Op::Rms, x, -1, true, v.pos)}, {}, v.pos);
        } else {
          int squares = emit(Op::Mul, {x, x}, {}, v.pos);
          int shifted = emit(Op::Add, {mean(squares, -1, true, v.pos), constant(decimal_constant(*v.attrs.eps), v.pos)}, {}, v.pos);
          result = emit(Op::Div, {x, emit(Op::Sqrt, {shifted}, {}, v.pos)}, {}, v.pos);
        }
        break;
      case Op::LayerNorm: {
        // As torch.nn.LayerNorm without its affine: the biased variance of the centred row. The
        // row is centred twice: a mean summed in f32 is off by the rounding of a sum as large as
        // the row's mean times its length, which on a row with a large mean and a small spread is
        // a large part of the spread; the second mean, of values the size of the spread, takes
        // that error out, as PyTorch's Welford statistics do (docs/design.md, "Numerics").
        int once = emit(Op::Sub, {x, mean(x, -1, true, v.pos)}, {}, v.pos);
        int centred = emit(Op::Sub, {once, mean(once, -1, true, v.pos)}, {}, v.pos);
        int var = mean(emit(Op::Mul, {centred, centred}, {}, v.pos), -1, true, v.pos);
        int shifted = emit(Op::Add, {var, constant(decimal_constant(v.attrs.eps.value_or(1e-5)), v.pos)}, {}, v.pos);
        result = emit(Op::Div, {centred, emit(Op::Sqrt, {shifted}, {}, v.pos)}, {}, v.pos);
        break;
      }
      case Op::Softmax: {
        // As PyTorch computes it: the row max subtracted first, so exp never overflows.
        int shifted = emit(Op::Sub, {x, reduce(Op::Max, x, v.attrs.axis, true, v.pos)}, {}, v.pos);
        int e = emit(Op::Exp, {shifted}, {}, v.pos);
        result = emit(Op::Div, {e, reduce(Op::Sum, e, v.attrs.axis, true, v.pos)}, {}, v.pos);
        break;
      }
      default:
        throw Error(Error::Kind::Failed, std::string("lower_composites: no lowering for ") + op_name(v.op));
    }
    if (widen) result = cast(result, dtype, v.pos);
    Value& r = out_.values[size_t(result)];
    if (!(r.type == v.type))
      throw Error(Error::Kind::Failed, std::string("lower_composites: ") + op_name(v.op) + " lowered to a different type");
    r.name = v.name;
    r.named = v.named;
    r.pos = v.pos;
    map_.push_back(result);
  }

 private:
  int mean(int x, int axis, bool keepdims, const SourceRange& pos) {
    int sum = reduce(Op::Sum, x, axis, keepdims, pos);
    const Value& xv = out_.value(x);
    int a = axis < 0 ? axis + int(xv.type.shape.size()) : axis;
    Dim k = xv.type.shape.at(size_t(a));
    return emit(Op::Div, {sum, constant({k, 0}, pos)}, {}, pos);
  }

  int reduce(Op op, int x, int axis, bool keepdims, const SourceRange& pos) {
    Attrs a;
    a.axis = axis;
    a.keepdims = keepdims;
    return emit(op, {x}, a, pos);
  }

  int cast(int x, DType to, const SourceRange& pos) {
    Attrs a;
    a.dtype = to;
    return emit(Op::Cast, {x}, a, pos);
  }

  int constant(Constant c, const SourceRange& pos) {
    Attrs a;
    a.constant = std::move(c);
    return emit(Op::Const, {}, a, pos);
  }

  int emit(Op op, std::vector<int> operands, Attrs attrs, const SourceRange& pos) {
    std::string error;
    const int id = append_value(out_, op, std::move(operands), std::move(attrs), pos, &error);
    if (id < 0) throw Error(Error::Kind::Failed, "lower_composites: " + error);
    return id;
  }

  std::string fresh() {
    std::string n;
    do {
      n = std::string("t").append(std::to_string(counter_++));
    } while (taken_.count(n));
    taken_.insert(n);
    return n;
  }

  const Program& src_;
  Program out_;
  std::vector<int> map_;  // source id -> lowered id
  std::set<std::string> taken_;
  int counter_ = 0;
};

}  // namespace

Program lower_composites(const Program& program) { return Lowering(program).run(); }

}  // namespace prism
