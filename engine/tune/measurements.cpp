#include "engine/tune/measurements.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <limits>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "engine/error.h"
#include "engine/sgraph/parse.h"
#include "engine/sgraph/print.h"
#include "engine/tune/backends.h"
#include "engine/tune/cost_model.h"
#include "engine/util/csv.h"

namespace prism::tune {

namespace {

// A stored row's sizes fit its target's tile or spill budget when they were tuned; read back, its
// tiles are not checked again (the spill budget is described at run time, not stored).
constexpr sgraph::TileBudget kTunedAlready{std::numeric_limits<int64_t>::max()};

using backend::number_text;
using backend::parse_number;

// Each column: its name, how a row writes it and how a field reads back into a row.
struct Column {
  const char* name;
  std::function<std::string(const StoredRow&)> write;
  std::function<void(const std::string&, StoredRow&)> read;
};

int64_t parse_integer(const std::string& text, const std::string& what) {
  const double value = parse_number(text, what);
  if (value != double(int64_t(value))) throw Error(Error::Kind::InvalidArgument, what + " is not an integer: '" + text + "'");
  return int64_t(value);
}

// "d=4096 n=8" (sizes_text), "-" for none.
std::map<std::string, int64_t> parse_sizes(const std::string& text, const std::string& what) {
  std::map<std::string, int64_t> sizes;
  if (text == "-") return sizes;
  for (const auto& [name, value] : backend::parse_feature_words(text)) sizes[name] = parse_integer(value, what + " " + name);
  return sizes;
}

std::string curve_text(const std::vector<std::pair<double, double>>& curve) {
  std::string s;
  for (const auto& [bytes, gbs] : curve) s += (s.empty() ? "" : " ") + number_text(bytes) + ":" + number_text(gbs);
  return s;
}

std::vector<std::pair<double, double>> parse_curve(const std::string& text) {
  std::vector<std::pair<double, double>> curve;
  std::istringstream in(text);
  for (std::string point; in >> point;) {
    const size_t colon = point.find(':');
    if (colon == std::string::npos) throw Error(Error::Kind::InvalidArgument, "a read-curve point is not bytes:GB/s: '" + point + "'");
    curve.emplace_back(parse_number(point.substr(0, colon), "read_curve"), parse_number(point.substr(colon + 1), "read_curve"));
  }
  return curve;
}

std::string hash_text(uint64_t hash) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, hash);
  return buf;
}

// Where a column's field lives: the row itself or its target description.
template <typename Owner, typename Row>
auto& part(Row& m) {
  if constexpr (std::is_same_v<Owner, StoredRow>) return m;
  else return m.target;
}

template <typename T, typename Owner>
Column integer(const char* name, T Owner::*field) {
  return {name, [field](const StoredRow& m) { return std::to_string(part<Owner>(m).*field); },
          [field, name](const std::string& s, StoredRow& m) { part<Owner>(m).*field = T(parse_integer(s, name)); }};
}
template <typename Owner>
Column number(const char* name, double Owner::*field) {
  return {name, [field](const StoredRow& m) { return number_text(part<Owner>(m).*field); },
          [field, name](const std::string& s, StoredRow& m) { part<Owner>(m).*field = parse_number(s, name); }};
}
template <typename Owner>
Column text(const char* name, std::string Owner::*field) {
  return {name, [field](const StoredRow& m) { return part<Owner>(m).*field; },
          [field](const std::string& s, StoredRow& m) { part<Owner>(m).*field = s; }};
}
// Named sizes as sizes_text writes them ("d=4096 n=8", "-" for none).
Column sizes(const char* name, std::map<std::string, int64_t> StoredRow::*field) {
  return {name, [field](const StoredRow& m) { return sizes_text(m.*field); },
          [field, name](const std::string& s, StoredRow& m) { m.*field = parse_sizes(s, name); }};
}

// The columns in file order: the machine, the shape, the row, and the family's text last (it
// spans lines). The target column comes before features, which its backend reads.
const std::vector<Column>& columns() {
  static const std::vector<Column> kColumns = {
      text("date", &StoredRow::date),
      {"target", [](const StoredRow& m) { return std::string(target_name(m.target.target)); },
       [](const std::string& s, StoredRow& m) {
         const auto target = parse_target(s);
         if (!target) throw Error(Error::Kind::InvalidArgument, "no target is named '" + s + "' (" + target_names() + ")");
         m.target.target = *target;
       }},
      text("device", &backend::TargetDescription::model),
      text("toolchain", &backend::TargetDescription::toolchain),
      integer("cores", &backend::TargetDescription::cores),
      integer("l1_bytes", &backend::TargetDescription::l1_bytes),
      integer("l2_bytes", &backend::TargetDescription::l2_bytes),
      integer("l3_bytes", &backend::TargetDescription::l3_bytes),
      number("bandwidth_gbs", &backend::TargetDescription::bandwidth_gbs),
      number("cache_bandwidth_gbs", &backend::TargetDescription::cache_bandwidth_gbs),
      number("peak_gflops", &backend::TargetDescription::peak_gflops),
      integer("fast_memory_bytes", &backend::TargetDescription::fast_memory_bytes),
      integer("described_measured", &backend::TargetDescription::measured),
      {"read_curve", [](const StoredRow& m) { return curve_text(m.target.read_curve); },
       [](const std::string& s, StoredRow& m) { m.target.read_curve = parse_curve(s); }},
      {"features", [](const StoredRow& m) { return backend_for(m.target.target).features_text(m.target); },
       [](const std::string& s, StoredRow& m) { backend_for(m.target.target).read_features(s, m.target); }},
      text("workload", &StoredRow::workload),
      sizes("bindings", &StoredRow::bindings),
      integer("candidate", &StoredRow::candidate),
      {"family", [](const StoredRow& m) { return hash_text(m.family); },
       [](const std::string& s, StoredRow& m) {
         char* end = nullptr;
         m.family = std::strtoull(s.c_str(), &end, 16);
         if (s.empty() || *end) throw Error(Error::Kind::InvalidArgument, "family is not a hexadecimal hash: '" + s + "'");
       }},
      sizes("sizes", &StoredRow::sizes),
      integer("threads", &StoredRow::threads),
      sizes("schedule", &StoredRow::schedule),
      integer("cost_rank", &StoredRow::cost_rank),
      number("predicted_ms", &StoredRow::predicted_ms),
      number("memory_bytes", &StoredRow::memory_bytes),
      number("flops", &StoredRow::flops),
      integer("ok", &StoredRow::ok),
      number("measured_ms", &StoredRow::measured_ms),
      number("spread", &StoredRow::spread),
      text("error", &StoredRow::error),
      number("baseline_ms", &StoredRow::baseline_ms),
      number("roofline_ms", &StoredRow::roofline_ms),
      integer("tuner_revision", &StoredRow::tuner_revision),
      text("graph", &StoredRow::graph),
  };
  return kColumns;
}

// Whether a row ran at its backend's default schedule (a schedule the backend no longer offers is
// not the default).
bool is_default_schedule(const StoredRow& m) {
  try {
    const backend::Backend& backend = backend_for(m.target.target);
    return backend.resolve_schedule({}, m.target) == backend.resolve_schedule(m.schedule, m.target);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::vector<StoredRow> measurements(const TuneResult& result, const std::vector<Candidate>& families, const backend::Backend& backend,
                                      const backend::TargetDescription& target) {
  std::vector<StoredRow> out;
  const DimBindings dims(result.bindings.begin(), result.bindings.end());
  for (const TuneRow& row : result.rows) {
    auto family = std::find_if(families.begin(), families.end(), [&](const Candidate& c) { return c.id == row.candidate && c.hash == row.family; });
    if (family == families.end()) continue;
    const sgraph::SGraph stored = backend.stored(*family->graph);
    StoredRow m;
    m.date = result.measured.at.substr(0, 10);
    m.workload = result.program;
    m.bindings = result.bindings;
    m.candidate = row.candidate;
    m.family = row.family;
    m.graph = sgraph::print(stored);
    m.sizes = row.sizes;
    m.schedule = row.schedule;
    m.threads = result.threads;
    m.cost_rank = row.cost_rank;
    m.predicted_ms = row.predicted_ms;
    const CostEstimate estimate = estimate_cost(sgraph::instantiate(stored, dims, DimBindings(row.sizes.begin(), row.sizes.end()), target.spill_budget()), target);
    m.memory_bytes = estimate.memory_bytes;
    m.flops = estimate.flops;
    m.ok = row.ok;
    m.measured_ms = row.measured_ms;
    m.spread = row.spread;
    m.error = row.error;
    m.baseline_ms = result.baseline_ms;
    m.roofline_ms = result.roofline_ms;
    m.tuner_revision = result.measured.tuner_revision;
    m.target = target;
    out.push_back(std::move(m));
  }
  return out;
}

std::string measurements_header() {
  std::vector<std::string> names;
  for (const Column& c : columns()) names.push_back(c.name);
  return csv_record(names);
}

std::string measurements_csv(const std::vector<StoredRow>& rows) {
  std::string out;
  for (const StoredRow& m : rows) {
    std::vector<std::string> fields;
    for (const Column& c : columns()) fields.push_back(c.write(m));
    out += csv_record(fields);
  }
  return out;
}

std::vector<StoredRow> parse_measurements(std::string_view csv) {
  const std::vector<CsvRecord> records = parse_csv(csv);
  if (records.empty()) throw Error(Error::Kind::InvalidArgument, "a measurements file starts with its header line");
  std::vector<int> field_of;  // each column's field in the file
  for (const Column& c : columns()) {
    const auto& header = records[0].fields;
    auto at = std::find(header.begin(), header.end(), c.name);
    if (at == header.end()) throw Error(Error::Kind::InvalidArgument, std::string("the measurements' header has no column '") + c.name + "'");
    field_of.push_back(int(at - header.begin()));
  }
  std::vector<StoredRow> rows;
  for (size_t r = 1; r < records.size(); ++r) {
    const CsvRecord& record = records[r];
    if (record.fields.size() != records[0].fields.size())
      throw Error(Error::Kind::InvalidArgument, "measurements line " + std::to_string(record.line) + ": " + std::to_string(record.fields.size()) +
                                                    " fields where the header has " + std::to_string(records[0].fields.size()));
    StoredRow m;
    for (size_t c = 0; c < columns().size(); ++c) {
      try {
        columns()[c].read(record.fields[size_t(field_of[c])], m);
      } catch (const std::exception& e) {
        throw Error(Error::Kind::InvalidArgument, "measurements line " + std::to_string(record.line) + ", column " + columns()[c].name + ": " + e.what());
      }
    }
    rows.push_back(std::move(m));
  }
  return rows;
}

std::vector<ShapeRegret> model_regret(const std::vector<StoredRow>& rows) {
  using Key = std::tuple<std::string, std::string, std::string, std::string>;  // device, date, workload, bindings
  std::map<Key, std::vector<const StoredRow*>> shapes;
  for (const StoredRow& m : rows)
    if (m.ok) shapes[{m.target.model, m.date, m.workload, sizes_text(m.bindings)}].push_back(&m);
  std::vector<ShapeRegret> out;
  for (const auto& [key, shape] : shapes) {
    ShapeRegret r;
    std::tie(r.device, r.date, r.workload, std::ignore) = key;
    r.bindings = shape.front()->bindings;
    // The model's order: its estimate, then the backend's default schedule before the others (a
    // schedule that keeps the target, its threads alone, is estimated as the default; one ranked
    // on a target of its own numbers its rows in that ranking), then the rank it gave then.
    std::tuple<double, bool, int> first{};
    std::pair<bool, int> stored_order{};  // the stored model's: the default schedule, then rank
    double stored_ms = 0;
    for (const StoredRow* m : shape) {
      r.best_ms = r.best_ms > 0 ? std::min(r.best_ms, m->measured_ms) : m->measured_ms;
      const bool alternative = !is_default_schedule(*m);
      if (stored_ms == 0 || std::pair{alternative, m->cost_rank} < stored_order) stored_order = {alternative, m->cost_rank}, stored_ms = m->measured_ms;
      std::tuple<double, bool, int> order;
      try {
        const DimBindings dims(m->bindings.begin(), m->bindings.end()), sizes(m->sizes.begin(), m->sizes.end());
        order = {estimate_cost(sgraph::instantiate(sgraph::parse(m->graph), dims, sizes, kTunedAlready), m->target).seconds,
                 alternative, m->cost_rank};
      } catch (const std::exception& e) {
        r.unranked.push_back("candidate " + std::to_string(m->candidate) + " " + sizes_text(m->sizes) + ": " + e.what());
        continue;
      }
      if (++r.ranked == 1 || order < first) {
        first = order;
        r.first_candidate = m->candidate, r.first_sizes = m->sizes, r.first_schedule = m->schedule, r.first_ms = m->measured_ms;
      }
    }
    r.regret = r.ranked > 0 && r.best_ms > 0 ? r.first_ms / r.best_ms : 0;
    r.stored_regret = r.best_ms > 0 ? stored_ms / r.best_ms : 0;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace prism::tune
