#include "engine/backend/cuda/plan.h"

#include <optional>
#include <sstream>

#include "engine/error.h"
#include "engine/ir/shape.h"

namespace prism::backend::cuda {

namespace {

[[noreturn]] void malformed(const std::string& line) {
  throw Error(Error::Kind::InvalidArgument, "malformed CUDA plan line: '" + line.substr(0, 200) + "'");
}

}  // namespace

ColumnMajorGemm column_major(const CudaGemm& g) {
  ColumnMajorGemm c;
  c.transpose_first = g.trans_b;
  c.transpose_second = g.trans_a;
  c.m = g.n, c.n = g.m, c.k = g.k;
  c.ld_first = g.trans_b ? g.k : g.n;
  c.ld_second = g.trans_a ? g.m : g.k;
  c.ld_c = g.n;
  return c;
}

std::vector<CudaGemm> batched_gemms(const CudaGemm& matrix, const std::vector<int64_t>& batch, const GemmOperand& a, const GemmOperand& b,
                                    const GemmOperand& c) {
  const int64_t nb = element_count(batch);
  auto offset_of = [&](const GemmOperand& x, int64_t i) {
    int64_t at = x.offset;
    for (size_t d = batch.size(); d-- > 0;) {
      at += i % batch[d] * x.batch_strides.at(d);
      i /= batch[d];
    }
    return at;
  };
  // The stride between batch elements when it is uniform: a whole matrix, or 0 (one for all).
  auto uniform = [&](const GemmOperand& x, int64_t size, int64_t* stride) {
    for (int64_t candidate : {size, int64_t(0)}) {
      bool all = true;
      for (int64_t i = 0; i < nb && all; ++i) all = offset_of(x, i) == x.offset + i * candidate;
      if (all) return *stride = candidate, true;
    }
    return false;
  };
  CudaGemm g = matrix;
  g.offset_a = a.offset, g.offset_b = b.offset, g.offset_c = c.offset;
  if (uniform(a, g.m * g.k, &g.stride_a) && uniform(b, g.k * g.n, &g.stride_b) && uniform(c, g.m * g.n, &g.stride_c) && g.stride_c != 0) {
    g.batch = nb;
    return {g};
  }
  std::vector<CudaGemm> calls;
  for (int64_t i = 0; i < nb; ++i) {
    CudaGemm one = matrix;
    one.batch = 1;
    one.stride_a = one.stride_b = one.stride_c = 0;
    one.offset_a = offset_of(a, i);
    one.offset_b = offset_of(b, i);
    one.offset_c = offset_of(c, i);
    calls.push_back(one);
  }
  return calls;
}

bool CudaPlan::uses_cublas() const {
  for (const auto& s : steps)
    if (s.is_gemm) return true;
  return false;
}

std::string plan_text(const CudaPlan& plan) {
  std::ostringstream out;
  auto tensors = [&](const char* role, const std::vector<CudaTensor>& list) {
    for (const auto& t : list)
      out << "tensor " << (t.zeroed ? "zeroed" : role) << " " << t.name << " " << t.elements << " " << dtype_name(t.dtype) << "\n";
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
      else if (role == "scratch" || role == "zeroed") t.zeroed = role == "zeroed", plan.scratch.push_back(t);
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

namespace {

// A library matmul's cuBLAS calls, or none where a layout or the dtypes do not suit cuBLAS.
std::optional<std::vector<CudaGemm>> vendor_matmul(const kir::Program& lowered, const kir::Stmt& s) {
  const kir::Place &a = s.in.at(0), &b = s.in.at(1), &c = s.out;
  const DType ta = lowered.tensor(a.tensor).dtype, tb = lowered.tensor(b.tensor).dtype, tc = lowered.tensor(c.tensor).dtype;
  if (ta != tb || (tc != ta && tc != DType::F32)) return std::nullopt;
  const size_t r = c.shape.size();
  if (r < 2 || a.shape.size() < 2 || b.shape.size() < 2 || a.shape.size() > r || b.shape.size() > r) return std::nullopt;
  CudaGemm g;
  g.a = a.tensor, g.b = b.tensor, g.c = c.tensor;
  g.m = c.shape[r - 2], g.n = c.shape[r - 1], g.k = a.shape.back();
  // An operand's matrix [rows, cols] as cuBLAS reads it: dense rows (cols apart), or stored
  // transposed (dense columns, rows apart). A size-1 dim fits either way.
  auto layout = [](const kir::Place& p, bool* trans) {
    const size_t n = p.shape.size();
    const int64_t rows = p.shape[n - 2], cols = p.shape[n - 1], rs = p.strides[n - 2], cs = p.strides[n - 1];
    if ((cs == 1 || cols == 1) && (rs == cols || rows == 1)) return *trans = false, true;
    if ((rs == 1 || rows == 1) && (cs == rows || cols == 1)) return *trans = true, true;
    return false;
  };
  if (!layout(a, &g.trans_a) || !layout(b, &g.trans_b) || c.strides != dense_strides(c.shape)) return std::nullopt;
  const std::vector<int64_t> batch(c.shape.begin(), c.shape.end() - 2);
  // Batch strides aligned to the result's batch, 0 where an operand broadcasts.
  auto operand = [&](const kir::Place& p) {
    GemmOperand o;
    o.batch_strides.assign(batch.size(), 0);
    const size_t lead = r - p.shape.size();
    for (size_t d = 0; d + 2 < p.shape.size(); ++d)
      if (p.shape[d] != 1) o.batch_strides[lead + d] = p.strides[d];
    return o;
  };
  return batched_gemms(g, batch, operand(a), operand(b), operand(c));
}

}  // namespace

CudaPlan candidate_plan(const sgraph::Instance& instance, const kir::Program& lowered, const CudaSource& source) {
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
  for (const auto& [name, words] : source.counters) plan.scratch.push_back({name, words, DType::F32, true});
  if (source.launch_of.size() != lowered.kernels.size()) throw Error(Error::Kind::InvalidArgument, "the source does not match its lowering");
  for (size_t k = 0; k < lowered.kernels.size(); ++k) {
    const kir::Kernel& kernel = lowered.kernels[k];
    if (k > 0 && source.launch_of[k] == source.launch_of[k - 1]) continue;  // a tail, in the launch before
    if (!kernel.custom && kernel.library.op == Op::Matmul)
      if (const std::optional<std::vector<CudaGemm>> calls = vendor_matmul(lowered, kernel.library)) {
        for (const CudaGemm& call : *calls) plan.steps.push_back(CudaStep{true, {}, call});
        continue;
      }
    CudaStep s;
    s.kernel = source.kernels.at(source.launch_of[k]);
    plan.steps.push_back(std::move(s));
  }
  return plan;
}

}  // namespace prism::backend::cuda
