#include "engine/interp/float_edges.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "engine/interp/half.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/input_domains.h"
#include "engine/ir/input_roles.h"

namespace prism {

namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

float largest(DType d) { return d == DType::F16 ? 65504.0f : std::numeric_limits<float>::max(); }

// The mean a row can have beside a spread of 1 that the dtype still resolves in steps of 2^-6.
float shift(DType d) { return d == DType::F16 ? 16.0f : d == DType::BF16 ? 2.0f : 65536.0f; }

float outlier(DType d) { return d == DType::F16 ? 256.0f : 1e20f; }

// Index `flat`'s coordinate along `axis` of a row-major `shape`.
int64_t coordinate(const std::vector<int64_t>& shape, int64_t flat, int axis) {
  for (size_t a = shape.size(); a-- > size_t(axis) + 1;) flat /= shape[a];
  return flat % shape[size_t(axis)];
}

struct Edges : SetBasis {
  std::vector<size_t> large;  // activations and mask candidates, in parameter order

  DType dtype(size_t i) const { return program.value(program.inputs[i]).type.dtype; }
  // A value for input i, kept inside its domain.
  float within(size_t i, float x) const { return domains[i] == Domain::Any ? x : std::fabs(x); }

  std::map<std::string, Tensor> drawn() const {
    std::map<std::string, Tensor> d;
    random_inputs(program, dims, seed, &d);
    return d;
  }

  // The large inputs replaced by f(i, k, drawn value) (k: the input's place among the large ones).
  std::map<std::string, Tensor> each_large(const std::function<float(size_t, size_t, float)>& f, bool activations_only) const {
    std::map<std::string, Tensor> named = seeded;
    const std::map<std::string, Tensor> fresh = drawn();
    for (size_t k = 0; k < large.size(); ++k) {
      const size_t i = large[k];
      if (activations_only && !roles.activation(i)) continue;
      Tensor& t = named[name(i)] = fresh.at(name(i));
      for (float& x : t.data) x = round_to(t.dtype, within(i, f(i, k, x)));
    }
    return named;
  }

  FloatEdge shifted() const {
    return {"mean-shifted rows", [this] { return each_large([this](size_t i, size_t, float x) { return shift(dtype(i)) + x; }, true); }};
  }

  FloatEdge near_exp_overflow() const {
    return {"near exp overflow", [this] {
              return each_large([this](size_t i, size_t k, float x) { return (k % 2 ? -1.0f : 1.0f) * (std::log(largest(dtype(i))) + x); }, true);
            }};
  }

  // Mask candidate m as `masked` says (0 elsewhere), the other large inputs of std 100.
  FloatEdge beside_mask(size_t m, const std::string& what, MaskPattern masked) const {
    return {"large logits beside " + what + " (" + name(m) + ")", [this, m, masked] {
              std::map<std::string, Tensor> named =
                  each_large([](size_t, size_t, float x) { return float(x * 100 * std::sqrt(3.0)); }, false);
              fill_mask(named[name(m)] = seeded.at(name(m)), roles.mask_axis[m], masked);
              return named;
            }};
  }

  // class[k] for the k-th large input: 0 +H, 1 -H, 2 1/H, at four evenly spread places.
  FloatEdge outliers(const std::vector<int>& cls, const std::string& label) const {
    return {"opposite outliers over tiny values (" + label + ")", [this, cls] {
              std::map<std::string, Tensor> named = seeded;
              for (size_t k = 0; k < large.size(); ++k) {
                const size_t i = large[k];
                Tensor& t = named[name(i)];
                const float h = outlier(t.dtype), value = cls[k] == 0 ? h : cls[k] == 1 ? -h : 1 / h;
                const int64_t n = t.size(), places = std::min<int64_t>(4, n);
                for (int64_t j = 0; j < places; ++j) t.data[size_t(j * n / places + n / (2 * places))] = round_to(t.dtype, within(i, value));
              }
              return named;
            }};
  }

  void outlier_patterns(bool every, std::vector<FloatEdge>& sets) const {
    static const char* kClass[] = {"+H", "-H", "1/H"};
    auto label = [&](const std::vector<int>& cls) {
      std::string s;
      for (size_t k = 0; k < cls.size(); ++k) s += (k ? ", " : "") + name(large[k]) + " " + kClass[cls[k]];
      return s;
    };
    const size_t n = large.size();
    if (every && n <= 4) {
      size_t count = 1;
      for (size_t k = 0; k < n; ++k) count *= 3;
      for (size_t p = 0; p < count; ++p) {
        std::vector<int> cls(n);
        for (size_t k = 0, q = p; k < n; ++k, q /= 3) cls[k] = int(q % 3);
        sets.push_back(outliers(cls, label(cls)));
      }
      return;
    }
    for (size_t r = 0; r < std::min<size_t>(3, n + 1); ++r) {
      std::vector<int> cls(n);
      for (size_t k = 0; k < n; ++k) cls[k] = int((k + r) % 3);
      sets.push_back(outliers(cls, label(cls)));
    }
  }

  FloatEdge near_16_bit_range() const {
    return {"near the 16-bit range", [this] {
              std::map<std::string, Tensor> named = seeded;
              const std::map<std::string, Tensor> fresh = drawn();
              for (size_t i : large) {
                if (dtype(i) != DType::F16) continue;
                Tensor& t = named[name(i)] = fresh.at(name(i));
                for (float& x : t.data) x = round_to(t.dtype, within(i, x * largest(t.dtype) / 2));
              }
              return named;
            }};
  }
};

}  // namespace

std::vector<FloatEdge> float_edges(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& seeded,
                                   uint64_t seed, const FloatEdgeOptions& options) {
  auto e = std::make_shared<Edges>(Edges{SetBasis::of(program, dims, seeded, seed), {}});
  if (options.every_input_large) e->roles.weight.assign(program.inputs.size(), false);
  bool activations = false, sixteen = false;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (e->roles.weight[i]) continue;
    e->large.push_back(i);
    activations = activations || e->roles.activation(i);
    sixteen = sixteen || e->dtype(i) == DType::F16;
  }
  std::vector<FloatEdge> sets;
  if (activations) {
    sets.push_back(e->shifted());
    sets.push_back(e->near_exp_overflow());
  }
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const int axis = e->roles.mask_axis[i];
    if (axis < 0) continue;
    sets.push_back(e->beside_mask(i, "a zero mask", [](int64_t, int64_t, int64_t, int64_t) { return false; }));
    if (axis > 0) sets.push_back(e->beside_mask(i, "a causal -inf mask", [](int64_t q, int64_t k, int64_t nq, int64_t nk) { return k > q + nk - nq; }));
    else sets.push_back(e->beside_mask(i, "a -inf mask on half of each row", [](int64_t, int64_t k, int64_t, int64_t nk) { return k < nk / 2; }));
  }
  if (!e->large.empty()) e->outlier_patterns(options.every_outlier_pattern, sets);
  if (sixteen) sets.push_back(e->near_16_bit_range());
  // Each maker holds the state it was made from.
  for (FloatEdge& s : sets) s.make = [e, make = std::move(s.make)] { return make(); };
  return sets;
}

SetBasis SetBasis::of(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& seeded, uint64_t seed) {
  return SetBasis{program, dims, seeded, seed, input_roles(program), input_domains(program)};
}

void fill_mask(Tensor& t, int axis, const MaskPattern& masked) {
  const int64_t keys = t.shape[size_t(axis)], queries = axis > 0 ? t.shape[size_t(axis) - 1] : 1;
  for (int64_t f = 0; f < t.size(); ++f) {
    const int64_t key = coordinate(t.shape, f, axis), query = axis > 0 ? coordinate(t.shape, f, axis - 1) : 0;
    t.data[size_t(f)] = masked(query, key, queries, keys) ? kMinusInf : 0.0f;
  }
}

Program with_every_value(const Program& p) {
  Program q = p;
  for (const Value& v : p.values)
    if (v.op != Op::Input && v.op != Op::Const && std::find(p.outputs.begin(), p.outputs.end(), v.id) == p.outputs.end())
      q.outputs.push_back(v.id);
  return q;
}

bool overflowed(const std::vector<Tensor>& values, const std::map<std::string, Tensor>& inputs) {
  bool masked = false;
  for (const auto& [name, t] : inputs)
    for (float x : t.data) masked = masked || x == kMinusInf;
  for (const Tensor& t : values)
    for (float x : t.data)
      if (std::isnan(x) || x == -kMinusInf || (x == kMinusInf && !masked)) return true;
  return false;
}

bool overflows_inside(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& inputs, const CancelToken* cancel) {
  return overflowed(interpret(with_every_value(program), dims, inputs, cancel), inputs);
}

double error_where_finite(const Tensor& got, const Tensor& exact, const Tensor& own) {
  if (got.shape != exact.shape) return INFINITY;
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < got.data.size(); ++i) {
    if (!std::isfinite(exact.data[i]) || !std::isfinite(own.data[i])) continue;
    if (!std::isfinite(got.data[i])) return INFINITY;
    scale = std::max(scale, double(std::fabs(exact.data[i])));
    diff = std::max(diff, std::fabs(double(got.data[i]) - double(exact.data[i])));
  }
  return diff / scale;
}

double dtype_tolerance(DType dtype) { return dtype == DType::BF16 ? 8e-3 : dtype == DType::F16 ? 1e-3 : 1e-4; }

}  // namespace prism
