#include "engine/search/dag.h"

#include <algorithm>

#include "engine/error.h"
#include "engine/ir/infer_shapes.h"

namespace prism::search {

bool is_reduction(Op op) { return op == Op::Sum || op == Op::Max || op == Op::Rms; }

std::string Dag::key() const {
  std::string out;
  for (size_t i = size_t(num_inputs); i < values.size(); ++i) {
    const DagValue& v = values[i];
    if (!out.empty()) out.push_back(' ');
    out.append(op_name(v.op));
    if (is_reduction(v.op)) out.append("@").append(std::to_string(v.axis));
    out.push_back('(');
    for (size_t k = 0; k < v.operands.size(); ++k) {
      if (k) out.push_back(',');
      out.append(std::to_string(v.operands[k]));
    }
    out.push_back(')');
  }
  return out;
}

std::string Dag::ops_text() const {
  std::string out;
  for (size_t i = size_t(num_inputs); i < values.size(); ++i) {
    if (!out.empty()) out.append(", ");
    out.append(op_name(values[i].op));
  }
  return out;
}

Program Dag::to_program(const std::string& name) const {
  Program p;
  p.name = name;
  for (size_t i = 0; i < values.size(); ++i) {
    const DagValue& d = values[i];
    Value v;
    v.id = int(i);
    v.op = d.op;
    v.operands = d.operands;
    v.type = d.type;
    v.name = d.op == Op::Input ? d.name : std::string("t").append(std::to_string(i));
    v.named = d.op == Op::Input;
    if (is_reduction(d.op)) {
      v.attrs.axis = d.axis;
      v.attrs.keepdims = true;
    }
    if (d.op == Op::Input) {
      p.inputs.push_back(int(i));
      for (const Dim& dim : d.type.shape)
        for (const std::string& s : dim.symbols())
          if (std::find(p.dims.begin(), p.dims.end(), s) == p.dims.end()) p.dims.push_back(s);
    }
    p.values.push_back(std::move(v));
  }
  p.outputs.push_back(sink());
  return p;
}

}  // namespace prism::search
