#include "engine/search/check_dims.h"

#include "engine/ir/ops.h"

namespace prism::search {

std::set<std::string> parallel_dims(const Program& program) {
  std::set<std::string> others;
  auto mark = [&](const Dim& d) {
    for (const std::string& s : d.symbols()) others.insert(s);
  };
  for (const Value& v : program.values) {
    for (const Dim& d : v.type.shape)
      if (!d.as_symbol()) mark(d);
    for (const Dim& d : v.attrs.shape) mark(d);
    if (v.operands.empty()) continue;
    const std::vector<Dim>& in = program.value(v.operands[0]).type.shape;
    const OpClass cls = op_class(v.op);
    if (cls == OpClass::Matmul && !in.empty()) mark(in.back());
    if ((cls == OpClass::Reduce || cls == OpClass::Composite || cls == OpClass::Concat || cls == OpClass::Split) && !in.empty())
      mark(in.at(size_t(v.attrs.axis >= 0 ? v.attrs.axis : int(in.size()) - 1)));
    if (cls == OpClass::Reshape)
      for (const Dim& d : in) mark(d);
  }
  std::set<std::string> parallel;
  for (const std::string& d : program.dims)
    if (!others.count(d)) parallel.insert(d);
  return parallel;
}

namespace {

// The program's dims in order, the parallel ones from `parallel_size(k)`, the others at 12 (k + 1).
template <typename Size>
DimBindings sized(const Program& program, Size parallel_size) {
  const std::set<std::string> parallel = parallel_dims(program);
  DimBindings dims;
  int64_t others = 0, parallels = 0;
  for (const std::string& d : program.dims) dims[d] = parallel.count(d) ? parallel_size(parallels++) : 12 * ++others;
  return dims;
}

}  // namespace

DimBindings check_dims(const Program& program) {
  return sized(program, [](int64_t k) { return 6 * (2 * k + 1); });
}

DimBindings fingerprint_dims(const Program& program) {
  // 4, 8, 16, 20, 28, …: the multiples of 4 that 12 does not divide.
  return sized(program, [](int64_t k) { return 4 * (k + k / 2 + 1); });
}

}  // namespace prism::search
