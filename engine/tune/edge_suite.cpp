#include "engine/tune/edge_suite.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engine/error.h"
#include "engine/interp/float_edges.h"
#include "engine/interp/half.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/checked_dtypes.h"
#include "engine/ir/input_domains.h"
#include "engine/ir/shape.h"
#include "engine/ir/input_roles.h"

namespace prism::tune {

namespace {

std::string number_text(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

void round_tensor(Tensor& t) { round_all(t.dtype, t.data.data(), t.data.size()); }

// What every set shares: the program, its dims, the seeded inputs and what each input is.
struct Suite : SetBasis {
  std::vector<DType> checked;  // the dtype each output is held to (checked_dtypes.h)

  InputSet finish(std::string set_name, std::map<std::string, Tensor> named, const CancelToken* cancel) const {
    InputSet set{std::move(set_name), std::move(named), {}};
    set.reference = interpret(program, dims, set.named, cancel);
    return set;
  }

  // Activations drawn as seeded (unnarrowed, inside their domains), times std * sqrt(3): the
  // draw in [-1, 1) has std 1/sqrt(3).
  MakeInputSet magnitude(double std_dev) const {
    return [this, std_dev](const CancelToken* cancel) {
      std::map<std::string, Tensor> named = seeded, drawn;
      random_inputs(program, dims, seed, &drawn);
      for (size_t i = 0; i < program.inputs.size(); ++i) {
        if (!roles.activation(i)) continue;
        Tensor& t = named[name(i)] = drawn.at(name(i));
        for (float& x : t.data) x *= float(std_dev * std::sqrt(3.0));
        round_tensor(t);
      }
      return finish("std " + number_text(std_dev), std::move(named), cancel);
    };
  }

  // The seeded activations with four values at ±m (spread evenly; + only inside a domain).
  std::map<std::string, Tensor> with_outliers(float m) const {
    std::map<std::string, Tensor> named = seeded;
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      if (!roles.activation(i)) continue;
      Tensor& t = named[name(i)];
      const int64_t n = t.size(), k = std::min<int64_t>(4, n);
      for (int64_t j = 0; j < k; ++j) t.data[size_t(j * n / k + n / (2 * k))] = round_to(t.dtype, (j % 2 && domains[i] == Domain::Any) ? -m : m);
    }
    return named;
  }

  // The largest outliers of the dtype's list with which every value the reference computes
  // stays finite (a square of 1e30 overflows f32, and what follows an overflow is no answer to
  // check against: rsqrt(inf) is 0), else the smallest.
  MakeInputSet outliers() const {
    return [this](const CancelToken* cancel) {
      bool f16 = false;
      for (int id : program.inputs) f16 = f16 || program.value(id).type.dtype == DType::F16;
      const std::vector<float> sizes = f16 ? std::vector<float>{60000, 6000, 600} : std::vector<float>{1e30f, 1e10f, 1e4f};
      const Program every = with_every_value(program);
      InputSet set;
      for (float m : sizes) {
        set = InputSet{"outliers ±" + number_text(m), with_outliers(m), interpret(every, dims, with_outliers(m), cancel)};
        bool finite = true;
        for (const Tensor& t : set.reference)
          for (float v : t.data) finite = finite && std::isfinite(v);
        set.reference.resize(program.outputs.size());
        if (finite) break;
      }
      return set;
    };
  }

  MakeInputSet zero_rows() const {
    return [this](const CancelToken* cancel) {
      std::map<std::string, Tensor> named = seeded;
      for (size_t i = 0; i < program.inputs.size(); ++i) {
        Tensor& t = named[name(i)];
        if (!roles.activation(i) || t.shape.empty() || t.size() == 0) continue;
        const int64_t row = t.shape.back(), rows = t.size() / row;
        for (int64_t r : {int64_t(0), rows - 1}) std::fill_n(t.data.begin() + r * row, row, 0.0f);
      }
      return finish("rows of zeros", std::move(named), cancel);
    };
  }

  // Input `i`, a mask along `axis`, 0 but -inf where `masked(query, key)` (keys along the axis,
  // queries along the axis before it, 0 when there is none).
  MakeInputSet mask(size_t i, const std::string& what, MaskPattern masked) const {
    return [this, i, what, masked](const CancelToken* cancel) {
      std::map<std::string, Tensor> named = seeded;
      fill_mask(named[name(i)], roles.mask_axis[i], masked);
      return finish(what + " (" + name(i) + ")", std::move(named), cancel);
    };
  }

  void masks(size_t i, std::vector<MakeInputSet>& sets) const {
    const int axis = roles.mask_axis[i];
    const int64_t keys = seeded.at(name(i)).shape[size_t(axis)];
    if (axis > 0) sets.push_back(mask(i, "causal -inf mask", [](int64_t q, int64_t k, int64_t nq, int64_t nk) { return k > q + nk - nq; }));
    sets.push_back(mask(i, "-inf on a whole row", [axis](int64_t q, int64_t, int64_t, int64_t) { return axis == 0 || q == 0; }));
    if (keys >= 2) sets.push_back(mask(i, "-inf on the first half of each row", [](int64_t, int64_t k, int64_t, int64_t nk) { return k < nk / 2; }));
    if (keys >= 4) {
      sets.push_back(mask(i, "-inf on the first quarter of each row", [](int64_t, int64_t k, int64_t, int64_t nk) { return k < nk / 4; }));
      sets.push_back(mask(i, "-inf on the last quarter of each row", [](int64_t, int64_t k, int64_t, int64_t nk) { return k >= nk - nk / 4; }));
    }
  }

  // A floating-point edge set (float_edges.h); skipped where the program overflows inside.
  MakeInputSet float_edge(FloatEdge edge) const {
    return [this, edge = std::move(edge)](const CancelToken* cancel) {
      InputSet set{edge.name, edge.make(), {}, "", false};
      std::vector<Tensor> every = interpret(with_every_value(program), dims, set.named, cancel);
      if (overflowed(every, set.named)) {
        set.skip = "the program itself overflows on it, nothing compared";
        return set;
      }
      set.reference = interpret_exact_sums(program, dims, set.named, cancel);
      for (size_t o = 0; o < program.outputs.size() && set.skip.empty(); ++o) {
        const double own = error_where_finite(every[o], set.reference[o], every[o]);
        if (own > dtype_tolerance(checked[o]))
          set.skip = "the program itself is off by " + number_text(own) + " of output " + std::to_string(o) +
                     "'s magnitude on it (its own rounding), nothing compared";
      }
      return set;
    };
  }

  // Inputs with a domain: the first half of their values at its edge.
  MakeInputSet domain_edges() const {
    return [this](const CancelToken* cancel) {
      std::map<std::string, Tensor> named = seeded;
      for (size_t i = 0; i < program.inputs.size(); ++i) {
        if (domains[i] == Domain::Any) continue;
        Tensor& t = named[name(i)];
        std::fill_n(t.data.begin(), t.size() / 2, domains[i] == Domain::Positive ? 1.0f / 1024 : 0.0f);
      }
      return finish("domain edges", std::move(named), cancel);
    };
  }
};

}  // namespace

std::vector<MakeInputSet> edge_suite(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& seeded,
                                     uint64_t seed) {
  auto suite = std::make_shared<Suite>(Suite{SetBasis::of(program, dims, seeded, seed), checked_dtypes(program)});
  std::vector<MakeInputSet> sets;
  bool activations = false, domains = false;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    activations = activations || suite->roles.activation(i);
    domains = domains || suite->domains[i] != Domain::Any;
  }
  if (activations) {
    sets.push_back(suite->magnitude(10));
    sets.push_back(suite->magnitude(100));
    sets.push_back(suite->outliers());
    sets.push_back(suite->zero_rows());
  }
  for (size_t i = 0; i < program.inputs.size(); ++i)
    if (suite->roles.mask_axis[i] >= 0) suite->masks(i, sets);
  if (domains) sets.push_back(suite->domain_edges());
  for (FloatEdge& edge : float_edges(program, dims, seeded, seed)) sets.push_back(suite->float_edge(std::move(edge)));
  // Each maker holds the suite it was made from.
  for (MakeInputSet& make : sets) make = [suite, make = std::move(make)](const CancelToken* cancel) { return make(cancel); };
  return sets;
}

InputSet user_input_set(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& seeded,
                        const std::map<std::string, Tensor>& given, const CancelToken* cancel) {
  InputSet set{"", seeded, {}};
  for (const auto& [input, tensor] : given) {
    auto it = std::find_if(program.inputs.begin(), program.inputs.end(), [&](int id) { return program.value(id).name == input; });
    if (it == program.inputs.end()) throw Error(Error::Kind::InvalidArgument, "'" + program.name + "' has no input '" + input + "' to check with", input);
    const Value& v = program.value(*it);
    const std::vector<int64_t> want = concrete_shape(v.type.shape, dims);
    if (tensor.shape != want)
      throw Error(Error::Kind::InvalidArgument, "the data to check '" + input + "' with has shape " + shape_text(tensor.shape) + ", not " +
                                                    shape_str(v.type.shape) + " = " + shape_text(want));
    Tensor t = tensor;
    t.dtype = v.type.dtype;
    round_tensor(t);
    set.named[input] = std::move(t);
    set.name += (set.name.empty() ? "" : ", ") + input;
  }
  set.name = "your data (" + set.name + ")";
  set.reference = interpret(program, dims, set.named, cancel);
  return set;
}

std::vector<Tensor> ordered_inputs(const Program& program, const InputSet& set) {
  std::vector<Tensor> out;
  for (int id : program.inputs) out.push_back(set.named.at(program.value(id).name));
  return out;
}

}  // namespace prism::tune
