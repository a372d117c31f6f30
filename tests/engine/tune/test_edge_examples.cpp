// Every example and every example layer passes the edge suite (issue 45): tuned on the CPU at a
// small binding, no timed row is rejected on an edge set, and a candidate is found; so does the
// issue's causal attention, whose additive mask brings the -inf sets. Tagged [edge]
// to be run alone (tests/CMakeLists.txt gives it a longer time limit), in parts.
#include <catch2/catch.hpp>

#include "engine/workspace/workspace.h"
#include "../search/search_helpers.h"
#include "support/subprocess.h"

using namespace prism;

namespace {

struct Workload {
  std::string name, text;
  DimBindings dims;
};

std::vector<Workload> workloads() {
  std::vector<Workload> all;
  for (const auto& [name, dims] : test::small_example_dims()) all.push_back({name, test::read_example(name), dims});
  for (const test::ExampleLayer& layer : test::example_layers()) all.push_back({layer.name, test::layer_text(layer.name), layer.small});
  // The causal attention, the one workload here with an additive mask (-inf sets).
  all.push_back({"causal",
                 "program causal(Q: f32[B, q, e], K: f32[B, s, e], V: f32[B, s, e], M: f32[q, s]) {\n"
                 "  return matmul(softmax(matmul(Q, transpose(K, perm=[0, 2, 1])) / sqrt(e) + M), V)\n}\n",
                 {{"B", 2}, {"q", 8}, {"s", 64}, {"e", 16}}});
  return all;
}

// Tunes workloads [begin, end) and fails naming every row an edge set rejected.
void check_part(size_t part, size_t parts) {
  const std::vector<Workload> all = workloads();
  test::TempDir data;
  for (size_t i = part * all.size() / parts; i < (part + 1) * all.size() / parts; ++i) {
    const Workload& w = all[i];
    Workspace ws;
    ws.set_storage(data.path(), data / "cache");
    ws.open("untitled:" + w.name, w.text, 1);
    tune::TuneRequest request;
    request.bindings = {w.dims.begin(), w.dims.end()};
    // The default top K: what `tune` reports.
    const tune::TuneResult r = ws.tune(w.name, request);
    INFO(w.name << " " << tune::sizes_text(request.bindings));
    for (const std::string& note : r.edge_notes) UNSCOPED_INFO("note: " << note);
    CHECK_FALSE(r.edge_sets.empty());
    for (const tune::TuneRow& row : r.rows) {
      INFO("candidate " << row.candidate << " " << tune::sizes_text(row.sizes) << " (" << row.summary << ")");
      CHECK(row.error == "");
    }
    CHECK(r.best >= 0);
  }
}

}  // namespace

TEST_CASE("edge suite: examples/ part 1 of 6 pass it on the CPU", "[edge]") { check_part(0, 6); }
TEST_CASE("edge suite: examples/ part 2 of 6 pass it on the CPU", "[edge]") { check_part(1, 6); }
TEST_CASE("edge suite: examples/ part 3 of 6 pass it on the CPU", "[edge]") { check_part(2, 6); }
TEST_CASE("edge suite: examples/ part 4 of 6 pass it on the CPU", "[edge]") { check_part(3, 6); }
TEST_CASE("edge suite: examples/ part 5 of 6 pass it on the CPU", "[edge]") { check_part(4, 6); }
TEST_CASE("edge suite: examples/ part 6 of 6 pass it on the CPU", "[edge]") { check_part(5, 6); }
