#include "engine/backend/cuda/plan.h"

#include <sstream>

#include "engine/error.h"
#include "engine/ir/shape.h"

namespace prism::backend::cuda {

namespace {

[[noreturn]] void malformed(const std::string& line) {
  throw Error(Error::Kind::InvalidArgument, "malformed CUDA plan line: '" + line.substr(0, 200) + "'");
}

}  // namespace

bool CudaPlan::uses_cublas() const {
  for (const auto& s : steps)
    if (s.is_gemm) return true;
  return false;
}

std::string plan_text(const CudaPlan& plan) {
  std::ostringstream out;
  auto tensors = [&](const char* role, const std::vector<CudaTensor>& list) {
    for (const auto& t : list) out << "tensor " << role << " " << t.name << " " << t.elements << " " << dtype_name(t.dtype) << "\n";
  };
  tensors("input", plan.inputs);
  tensors("output", plan.outputs);
  tensors("scratch", plan.scratch);
  for (const auto& s : plan.steps) {
    if (s.is_gemm) {
      const CudaGemm& g = s.gemm;
      out << "gemm " << g.a << " " << g.b << " " << g.c << " " << g.m << " " << g.n << " " << g.k << " " << g.batch << " "
          << g.stride_a << " " << g.stride_b << " " << g.stride_c << " " << g.offset_a << " " << g.offset_b << " " << g.offset_c << " "
          << int(g.trans_a) << " " << int(g.trans_b) << "\n";
    } else {
      const CudaKernelInfo& k = s.kernel;
      out << "kernel " << k.name << " " << k.grid_blocks << " " << k.threads << " " << k.shared_bytes << " " << k.params.size();
      for (const auto& p : k.params) out << " " << p;
      out << "\n";
    }
  }
  out << "ptx\n" << plan.ptx;
  return out.str();
}

CudaPlan parse_plan(const std::string& text) {
  CudaPlan plan;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line == "ptx") {
      plan.ptx = text.substr(pos);
      return plan;
    }
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word == "tensor") {
      std::string role, dtype;
      CudaTensor t;
      in >> role >> t.name >> t.elements >> dtype;
      auto d = parse_dtype(dtype);
      if (!in || !d || t.elements < 0) malformed(line);
      t.dtype = *d;
      if (role == "input") plan.inputs.push_back(t);
      else if (role == "output") plan.outputs.push_back(t);
      else if (role == "scratch") plan.scratch.push_back(t);
      else malformed(line);
    } else if (word == "kernel") {
      CudaStep s;
      size_t n = 0;
      in >> s.kernel.name >> s.kernel.grid_blocks >> s.kernel.threads >> s.kernel.shared_bytes >> n;
      s.kernel.params.resize(n);
      for (auto& p : s.kernel.params) in >> p;
      if (!in) malformed(line);
      plan.steps.push_back(std::move(s));
    } else if (word == "gemm") {
      CudaStep s;
      s.is_gemm = true;
      CudaGemm& g = s.gemm;
      int ta = 0, tb = 0;
      in >> g.a >> g.b >> g.c >> g.m >> g.n >> g.k >> g.batch >> g.stride_a >> g.stride_b >> g.stride_c >> g.offset_a >> g.offset_b >> g.offset_c >>
          ta >> tb;
      if (!in || ta < 0 || ta > 1 || tb < 0 || tb > 1) malformed(line);
      g.trans_a = ta, g.trans_b = tb;
      plan.steps.push_back(std::move(s));
    } else if (!word.empty()) {
      malformed(line);
    }
  }
  throw Error(Error::Kind::InvalidArgument, "the CUDA plan has no 'ptx' line");
}

CudaPlan candidate_plan(const sgraph::Instance& instance, const CudaSource& source) {
  CudaPlan plan;
  const sgraph::SGraph& g = instance.graph;
  auto tensor = [&](const std::string& name) {
    CudaTensor t;
    t.name = name;
    for (const sgraph::TensorDecl& in : g.inputs)
      if (in.name == name) {
        t.elements = element_count(concrete_shape(in.type.shape, instance.bindings));
        t.dtype = in.type.dtype;
        return t;
      }
    auto it = instance.analysis.tensors.find(name);
    if (it == instance.analysis.tensors.end()) throw Error(Error::Kind::InvalidArgument, "the instance has no tensor '" + name + "'");
    t.elements = element_count(concrete_shape(it->second.shape, instance.bindings));
    t.dtype = it->second.dtype;
    return t;
  };
  for (const sgraph::TensorDecl& in : g.inputs) plan.inputs.push_back(tensor(in.name));
  for (const auto& name : g.outputs) plan.outputs.push_back(tensor(name));
  for (const auto& name : source.scratch_tensors) plan.scratch.push_back(tensor(name));
  for (const auto& k : source.kernels) {
    CudaStep s;
    s.kernel = k;
    plan.steps.push_back(std::move(s));
  }
  return plan;
}

}  // namespace prism::backend::cuda
