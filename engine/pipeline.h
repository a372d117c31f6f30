// The pipeline, in order: each pass, the IR it takes and gives, and the function that runs it
// (docs/architecture.md, "The pipeline"); and what a run asks to see after one of them, as text
// (`--dump-after NAME` in the REPL, `dumpAfter` in the protocol), as compilers print their IR after
// a pass. The passes run where the table says; each reports what it leaves to the run's Dump.
#pragma once
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prism::pipeline {

enum class Pass {
  Parse,        // text -> Program
  Normalize,    // Program -> Program: composites as primitives
  NameSizes,    // Program -> Program: fixed sizes as dims
  SearchForm,   // Program -> Program: casts out, transposes pushed to inputs, ranks raised
  Saturate,     // Program -> e-graph of its expressions
  Enumerate,    // e-graph -> computations (DAGs)
  Prune,        // DAG x plan -> families that pass structure, dims and memory
  Verify,       // family -> family proved equal to the program
  FixSizes,     // family -> family with the fixed sizes written back
  Instantiate,  // family x sizes -> instance
  Lower,        // instance -> kernel IR
  Print,        // kernel IR -> source
};

// Where a pass runs: a program's search (parse to fix-sizes: the REPL's `search`, the protocol's
// search/run), or the making of one kernel (instantiate to print: `code`, kernel/source).
enum class Stage { Search, Kernel };

struct PassInfo {
  Pass pass;
  Stage stage;
  const char* name;      // as `--dump-after` takes it
  const char* takes;     // the IR it reads
  const char* gives;     // the IR it leaves
  const char* function;  // what runs it
};

// Every pass, in the order a program goes through them.
const std::vector<PassInfo>& passes();
const char* pass_name(Pass pass);
std::optional<Pass> parse_pass(std::string_view name);
std::string pass_names(Stage stage);  // "parse, normalize, …": a stage's, for messages
Stage stage_of(Pass pass);

// What a run leaves after the one pass it asks for, item by item (a search's enumeration leaves a
// computation per item, its verification a family per item). Thread-safe: a search's workers add
// to it. At most `limit` items are kept; the rest are counted.
class Dump {
 public:
  explicit Dump(Pass after, size_t limit = 100) : after_(after), limit_(limit) {}
  Pass after() const { return after_; }
  // Adds what `pass` left (text() is called only when `pass` is the one asked for).
  void add(Pass pass, const std::function<std::string()>& text);
  std::vector<std::string> items() const;
  size_t dropped() const;

 private:
  const Pass after_;
  const size_t limit_;
  mutable std::mutex mutex_;
  std::vector<std::string> items_;
  size_t dropped_ = 0;
};

// dump->add(pass, text) where a run carries a dump (most carry none): a template, so that the
// search's per-computation and per-family calls build nothing when there is none.
template <class Text>
void dump_after(Dump* dump, Pass pass, const Text& text) {
  if (dump) dump->add(pass, text);
}

}  // namespace prism::pipeline
