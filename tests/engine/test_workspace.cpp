#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <thread>

#include "engine/interp/half.h"
#include "engine/io/npy.h"
#include "engine/workspace/workspace.h"

using namespace prism;
namespace fs = std::filesystem;

namespace {

const char* kRmsLinear =
    "program rms_linear(X: f16[n, d], W: f16[d, d]) {\n"
    "  Y = rms_norm(X)\n"
    "  return matmul(Y, W)\n"
    "}\n";

fs::path temp_dir(const std::string& tag) {
  fs::path dir = fs::temp_directory_path() / ("prism_ws_" + tag + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string error_message(const std::function<void()>& f, Error::Kind want) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(int(e.kind()) == int(want));
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("documents open, change and close", "[engine][workspace]") {
  Workspace ws;
  DocumentState st = ws.open("a.prism", kRmsLinear, 1);
  CHECK(st.uri == "a.prism");
  CHECK(st.version == 1);
  CHECK(st.diagnostics.empty());
  CHECK(st.programs == std::vector<std::string>{"rms_linear"});
  CHECK(ws.text("a.prism") == std::string(kRmsLinear));
  CHECK(ws.documents() == std::vector<std::string>{"a.prism"});

  st = ws.change("a.prism", "program rms_linear(X: f16[n]) {\n  return Z\n}\n", 2);
  REQUIRE(st.diagnostics.size() == 1);
  CHECK(st.diagnostics[0].file == "a.prism");
  CHECK(st.diagnostics[0].format() == "a.prism:2:10: error: undefined name 'Z'");
  CHECK(st.programs.empty());
  CHECK(ws.programs().empty());

  CHECK(error_message([&] { ws.change("a.prism", "", 2); }, Error::Kind::InvalidArgument).find("version 2") == 0);
  CHECK(error_message([&] { ws.change("nope.prism", "", 5); }, Error::Kind::NotFound) == "no open document 'nope.prism'");
  ws.close("a.prism");
  CHECK(!ws.document("a.prism"));
  CHECK(error_message([&] { ws.close("a.prism"); }, Error::Kind::NotFound) == "no open document 'a.prism'");
}

TEST_CASE("reopening the same text keeps its programs' searches; a changed text drops them", "[engine][workspace]") {
  Workspace ws;
  ws.open("a.prism", kRmsLinear, 1);
  SearchLimits limits;
  limits.max_block_ops = 4;
  const SearchResult first = ws.search("rms_linear", limits);
  ws.open("a.prism", kRmsLinear, 2);  // a batch reopening its manifest's files
  std::optional<SearchResult> kept = ws.search_result("rms_linear");
  REQUIRE(kept);
  CHECK(kept->version == 2);
  CHECK(kept->candidates.size() == first.candidates.size());
  ws.open("a.prism", std::string(kRmsLinear) + "\n", 3);
  CHECK_FALSE(ws.search_result("rms_linear"));
}

TEST_CASE("a document's text, and all of them together, have a limit the document store can read back", "[engine][workspace][security]") {
  // Issue 46, 4: text sent by a client had no limit (only files had one), and once the store of
  // open documents passed its 256 MiB read limit a restart lost every document.
  Workspace ws;
  const std::string padding(kMaxDocumentBytes - 100, '#');  // a comment line, then the program
  auto text = [&](int i) { return padding + "\nprogram p" + std::to_string(i) + "(X: f32[n]) {\n  return X\n}\n"; };
  CHECK_THAT(error_message([&] { ws.open("big.prism", std::string(kMaxDocumentBytes + 1, '#'), 1); }, Error::Kind::InvalidArgument),
             Catch::Contains("more than the limit of 16777216 (16 MiB)"));
  CHECK(ws.documents().empty());
  const size_t fit = kMaxOpenTextBytes / kMaxDocumentBytes;
  for (size_t i = 0; i < fit; ++i) CHECK(ws.open("d" + std::to_string(i), text(int(i)), 1).diagnostics.empty());
  CHECK_THAT(error_message([&] { ws.open("one-more", text(99), 1); }, Error::Kind::InvalidArgument),
             Catch::Contains("more than the limit of 67108864 (64 MiB); close some first"));
  CHECK_THAT(error_message([&] { ws.change("d0", text(0) + std::string(200, '#'), 2); }, Error::Kind::InvalidArgument),
             Catch::Contains("more than the limit"));
  ws.close("d1");
  CHECK(ws.open("one-more", text(99), 1).diagnostics.empty());
}

TEST_CASE("a program defined twice is a diagnostic at the second definition", "[engine][workspace]") {
  Workspace ws;
  DocumentState st = ws.open("a.prism", std::string(kRmsLinear) + "program rms_linear(X: f32[n]) { return X }\n", 1);
  REQUIRE(st.diagnostics.size() == 1);
  CHECK(st.diagnostics[0].message == "program 'rms_linear' is already defined (line 1)");
  CHECK(st.diagnostics[0].range.begin.line == 5);
  CHECK(st.programs == std::vector<std::string>{"rms_linear"});

  DocumentState other = ws.open("b.prism", "\nprogram rms_linear(X: f32[n]) { return X }\nprogram q(X: f32[n]) { return X }\n", 1);
  REQUIRE(other.diagnostics.size() == 1);
  CHECK(other.diagnostics[0].message == "program 'rms_linear' is already defined in a.prism (line 1)");
  CHECK(other.programs == std::vector<std::string>{"q"});
  CHECK(ws.show("rms_linear").summary.uri == "a.prism");
}

TEST_CASE("opening with replace closes the other documents that define the same programs", "[engine][workspace]") {
  Workspace ws;
  ws.open("a.prism", std::string(kRmsLinear) + "program keep(X: f32[n]) { return X }\n", 1);
  ws.open("c.prism", "program other(X: f32[n]) { return X }\n", 1);
  DocumentState b = ws.open("b.prism", "program rms_linear(X: f32[n]) { return exp(X) }\n", 1, /*replace=*/true);
  CHECK(b.diagnostics.empty());
  CHECK(b.replaced == std::vector<std::string>{"a.prism"});
  CHECK(ws.show("rms_linear").summary.uri == "b.prism");
  CHECK(!ws.document("a.prism"));  // the whole document goes, with `keep`
  CHECK(ws.document("c.prism"));
  // Without replace nothing is closed.
  DocumentState d = ws.open("d.prism", "program other(X: f32[n]) { return X }\n", 1);
  CHECK(d.replaced.empty());
  CHECK(d.diagnostics.size() == 1);
}

TEST_CASE("show and programs describe a program", "[engine][workspace]") {
  Workspace ws;
  ws.open("a.prism", kRmsLinear, 1);
  auto list = ws.programs();
  REQUIRE(list.size() == 1);
  CHECK(list[0].dims == std::vector<std::string>{"n", "d"});
  REQUIRE(list[0].inputs.size() == 2);
  CHECK(list[0].inputs[1].name == "W");
  CHECK(list[0].inputs[1].shape == std::vector<std::string>{"d", "d"});
  CHECK(list[0].inputs[1].op.empty());
  CHECK(list[0].outputs[0].op == "matmul");
  ProgramDetail d = ws.show("rms_linear");
  REQUIRE(d.values.size() == 1);  // the values the source names; outputs are listed separately
  CHECK(d.values[0].name == "Y");
  CHECK(d.values[0].op == "rms_norm");
  CHECK(d.values[0].pos == SourcePos{2, 3});
  CHECK(d.summary.outputs[0].name == "out");
  CHECK(error_message([&] { ws.show("rms_linar"); }, Error::Kind::NotFound) ==
        "unknown program 'rms_linar'; did you mean 'rms_linear'? (known programs: rms_linear)");
}

TEST_CASE("run resolves bindings and reports outputs", "[engine][workspace]") {
  Workspace ws;
  ws.open("a.prism", kRmsLinear, 1);
  RunRequest req;
  req.program = "rms_linear";
  req.bindings = {{"n", 2}, {"d", 8}};
  req.seed = 1;
  req.head = 4;
  RunResult r = ws.run(req);
  CHECK(r.program == "rms_linear");
  CHECK(r.bindings == std::map<std::string, int64_t>{{"d", 8}, {"n", 2}});
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].name == "out");
  CHECK(r.outputs[0].dtype == "f16");
  CHECK(r.outputs[0].shape == std::vector<int64_t>{2, 8});
  CHECK(r.outputs[0].head.size() == 4);
  CHECK(r.outputs[0].file.empty());
  RunResult again = ws.run(req);
  CHECK(again.outputs[0].sum == r.outputs[0].sum);
  req.seed = 2;
  CHECK(ws.run(req).outputs[0].sum != r.outputs[0].sum);

  req.bindings = {{"n", 2}};
  CHECK(error_message([&] { ws.run(req); }, Error::Kind::InvalidArgument) == "missing binding for dim 'd' (give d=...)");
  req.bindings = {};
  CHECK(error_message([&] { ws.run(req); }, Error::Kind::InvalidArgument) == "missing bindings for dims 'n', 'd' (give n=... d=...)");
  req.bindings = {{"n", 2}, {"d", 8}, {"k", 1}};
  CHECK(error_message([&] { ws.run(req); }, Error::Kind::InvalidArgument) == "program 'rms_linear' has no dim 'k' (its dims: n, d)");
  // A run says which inputs it drew.
  req.bindings = {{"n", 2}, {"d", 8}};
  CHECK(ws.run(req).random_inputs == std::vector<std::string>{"X", "W"});
  req.bindings = {{"n", 0}, {"d", 8}};
  CHECK(error_message([&] { ws.run(req); }, Error::Kind::InvalidArgument) == "binding n=0 must be a positive integer");
  req.program = "nope";
  CHECK(error_message([&] { ws.run(req); }, Error::Kind::NotFound) == "unknown program 'nope' (known programs: rms_linear)");
}

TEST_CASE("an unknown program's error names the first few programs and counts the rest", "[engine][workspace]") {
  Workspace ws;
  std::string text;
  for (int i = 0; i < 11; ++i) text += "program p" + std::to_string(i) + "(x: f32[n]) {\n  return x * 2\n}\n";
  ws.open("many.prism", text, 1);
  CHECK(error_message([&] { ws.show("nope"); }, Error::Kind::NotFound) ==
        "unknown program 'nope' (known programs: p0, p1, p2, p3, p4, p5, p6, p7 and 3 more; `programs` lists them)");
}

TEST_CASE("run reads dims and inputs from .npy files and writes outputs", "[engine][workspace]") {
  fs::path dir = temp_dir("io");
  Workspace ws;
  ws.open("a.prism", kRmsLinear, 1);
  ws.open("b.prism", "program two(X: f16[n, 2*d]) {\n  A, B = split(X, 2)\n  return A, B * 2\n}\n", 1);

  Tensor x;
  x.dtype = DType::F32;  // f32 file for an f16 input: rounded on the way in
  x.shape = {2, 4};
  x.data = {1.0f / 3, 1, 2, 3, 4, 5, 6, 7};
  write_npy((dir / "x.npy").string(), x);

  RunRequest req;
  req.program = "two";
  req.input_files = {{"X", (dir / "x.npy").string()}};
  req.output_file = (dir / "out.npy").string();
  RunResult r = ws.run(req);
  CHECK(r.bindings == std::map<std::string, int64_t>{{"d", 2}, {"n", 2}});
  REQUIRE(r.outputs.size() == 2);
  CHECK(r.outputs[0].name == "A");
  CHECK(r.outputs[0].file == (dir / "out.A.npy").string());
  CHECK(r.outputs[1].file == (dir / "out.out1.npy").string());
  Tensor a = read_npy(r.outputs[0].file);
  CHECK(a.dtype == DType::F16);
  CHECK(a.data == std::vector<float>{f16_bits_to_f32(f32_to_f16_bits(1.0f / 3)), 1, 4, 5});
  CHECK(read_npy(r.outputs[1].file).data == std::vector<float>{4, 6, 12, 14});
  CHECK(r.outputs[1].sum == 36);
  CHECK(r.outputs[1].abs_sum == 36);

  // One output: exactly the requested file.
  RunRequest one;
  one.program = "rms_linear";
  one.bindings = {{"n", 2}};
  one.input_files = {{"X", (dir / "x.npy").string()}};
  one.output_file = (dir / "o.npy").string();
  RunResult r1 = ws.run(one);
  CHECK(r1.bindings.at("d") == 4);
  CHECK(r1.outputs[0].file == one.output_file);
  CHECK(read_npy(one.output_file).shape == std::vector<int64_t>{2, 4});

  // Contradictions name the dim and both values.
  one.bindings = {{"n", 3}};
  CHECK(error_message([&] { ws.run(one); }, Error::Kind::InvalidArgument) ==
        "dim 'n' is 3 from the bindings but 2 from input 'X' (" + (dir / "x.npy").string() + ")");
  Tensor w;
  w.shape = {8, 8};
  w.data.assign(64, 1.0f);
  write_npy((dir / "w.npy").string(), w);
  one.bindings = {};
  one.input_files["W"] = (dir / "w.npy").string();
  CHECK(error_message([&] { ws.run(one); }, Error::Kind::InvalidArgument).find("dim 'd' is 8 from input 'W'") == 0);
  one.input_files = {{"Q", (dir / "x.npy").string()}};
  CHECK(error_message([&] { ws.run(one); }, Error::Kind::InvalidArgument) == "program 'rms_linear' has no input 'Q' (its inputs: X, W)");
  one.input_files = {{"X", (dir / "missing.npy").string()}};
  CHECK(error_message([&] { ws.run(one); }, Error::Kind::NotFound).find("missing.npy: cannot open") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("run honours cancellation and never holds the lock while interpreting", "[engine][workspace]") {
  Workspace ws;
  ws.open("a.prism", kRmsLinear, 1);
  CancelToken token;
  token.cancel();
  RunRequest req;
  req.program = "rms_linear";
  req.bindings = {{"n", 4}, {"d", 64}};
  CHECK(error_message([&] { ws.run(req, &token); }, Error::Kind::Cancelled) == "cancelled");

  // Runs on several threads while another thread edits documents.
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i)
        if (ws.run(req).outputs.size() == 1) ++ok;
    });
  threads.emplace_back([&] {
    for (int v = 2; v < 40; ++v) ws.open("b.prism", "program b" + std::to_string(v) + "(X: f32[n]) { return X }", v);
  });
  for (auto& t : threads) t.join();
  CHECK(ok == 15);
}
