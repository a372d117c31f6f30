#include "repl/commands.h"

#include <cstdint>

#include "engine/lang/op_signature.h"
#include "engine/lang/suggest.h"
#include "repl/format.h"
#include "repl/session.h"

namespace prism::repl {

const std::vector<CommandSpec>& command_table() {
  static const std::vector<CommandSpec> table = {
      {"open", "open PATH", "open a .prism file (its programs become available)",
       "Opens PATH in the daemon and prints its diagnostics. Opening a file again reloads it.\n"
       "A program can also be typed or pasted directly: `program NAME(...) { ... }`.",
       CommandSpec::Arg::Path, {}, &Session::open},
      {"close", "close NAME|PATH|URI", "close the document that defines program NAME, a file, or a URI",
       "Forgets the document: the one that defines program NAME (typed at any prompt, in any session,\n"
       "or a file), else the file PATH, or the document URI (`repl:/NAME`, `file:///…`).",
       CommandSpec::Arg::Program, {}, &Session::close},
      {"programs", "programs", "list the open programs with their inputs and outputs", "", CommandSpec::Arg::None, {}, &Session::programs},
      {"show", "show NAME", "show a program's inferred shapes and its lowered form",
       "Prints the signature, the inferred dtype and symbolic shape of every value, and the program\n"
       "with composites (rms_norm, layer_norm, softmax, mean) lowered to primitives.",
       CommandSpec::Arg::Program, {}, &Session::show},
      {"run", "run NAME [DIM=VALUE...] [--seed S] [--in X=x.npy] [--out o.npy] [--head K]",
       "run a program in the reference interpreter",
       "Binds the symbolic dims (n=8 d=4096) and evaluates NAME on random inputs drawn from the\n"
       "seed (default 0), or on .npy files given with --in INPUT=PATH (dims they determine may be\n"
       "left out). Prints each output's shape, checksums and first K values (--head, default 8);\n"
       "--out PATH writes the output as .npy (several outputs: PATH's stem.NAME.npy).\n"
       "Ctrl-C cancels a run in progress.",
       CommandSpec::Arg::Program, {}, &Session::run},
      {"equiv", "equiv A B [--nodes N] [--iterations N] [--seconds S] [--expect proved|refuted|unknown]",
       "prove two computations equal, or refute them with a counterexample",
       "A and B are program names or expressions over a program's inputs (at least one names a\n"
       "program, which gives the inputs and dims): `equiv rms_linear matmul(X, W) / rms(X)`.\n"
       "Quote an expression that comes first: `equiv \"sum(X, axis=-1)\" my_program`.\n"
       "First the reference interpreter compares them on random inputs (refuted: the bindings,\n"
       "seed and difference); then the e-graph looks for a proof with symbolic dims (proved: the\n"
       "chain of rewrites). `unknown` says which limit stopped the search. Ctrl-C cancels.\n"
       "In a script, a result other than --expect's (default: proved) fails the script (exit 1).",
       CommandSpec::Arg::Program, {}, &Session::equiv},
      {"egraph", "egraph", "show the resident e-graph: size, node cap, per-rule statistics",
       "The daemon keeps one e-graph for all open programs; opening or editing a program adds only\n"
       "its new terms. Lists nodes, classes, memory, terms added vs shared, and each rule's matches,\n"
       "applications and time.",
       CommandSpec::Arg::None, {}, &Session::egraph},
      {"search", "search NAME [--budget SECONDS] [--max-ops N] [--max-kernels K] [--max-accumulators A] [--library-kernels 0-3] [--kernel-cuts 0-3] [--threads T] [--dump-after PASS]",
       "search for fused kernel families equivalent to a program",
       "Generates families of kernels with symbolic grid sizes and loop ranges, prunes them by\n"
       "symbolic reasoning, and keeps those an e-graph proves equal to NAME. A live progress bar\n"
       "shows the counts (not in scripts); Ctrl-C cancels. Results are kept per program version:\n"
       "`candidates NAME` lists them, `explain NAME K` shows one with its proof.\n"
       "--dump-after PASS prints what a pass left (at most 100 items; the search runs again): parse,\n"
       "normalize, name-sizes, search-form, saturate, enumerate, prune, verify, fix-sizes\n"
       "(docs/architecture.md, \"The pipeline\").",
       CommandSpec::Arg::Program, {}, &Session::search},
      {"candidates", "candidates NAME", "list the verified families the last search found",
       "One row per family: its id, how many kernels, its symbolic parameters, and a summary.\n"
       "What every family shares (clauses, the ops they all begin with) is said once above the\n"
       "table; each row keeps what tells it apart, wrapped to the terminal, never cut.\n"
       "With --json, one object per family (id, kernels, text, verified, summary, parameters).",
       CommandSpec::Arg::Program, {}, &Session::candidates},
      {"explain", "explain NAME K [--no-proof]", "show family K's structure and its equivalence proof",
       "--no-proof leaves the proof out (it runs to hundreds of lines) and says how long it is.",
       CommandSpec::Arg::Program, {}, &Session::explain},
      {"tune", "tune NAME [DIM=VALUE...] [--target T] [--top K] [--threads T] [--seed S] [--fresh] [--check-with X=x.npy]...",
       "tune a program's families for concrete dims and show the speedup table",
       "Instantiates every verified family (searching first if needed) for the dims (every dim the\n"
       "program has; none for one of fixed sizes, as prism.compile imports them), ranks the\n"
       "instantiations with the cost model, compiles the top K (default 8) in parallel, checks each\n"
       "against the reference interpreter on seeded inputs and on the edge suite (large magnitudes,\n"
       "outliers, -inf masks, rows of zeros, inputs at their domain's edge: a row that gives NaN or\n"
       "a wrong value where the reference is finite fails with the set's name; --check-with X=x.npy,\n"
       "repeatable, adds your own data for X, the other inputs drawn as usual) and times it in a\n"
       "separate process (on the seeded inputs), beside the eager\n"
       "baseline (one kernel per op; OpenBLAS matmul on the CPU, cuBLAS on the GPU) and the roofline.\n"
       "T is a target `daemon status` lists: cpu (the default), cuda, or one a build registered;\n"
       "--target cuda needs a CUDA device and NVRTC (f16 stays f16 there). The baseline and the\n"
       "candidates are timed in interleaved rounds (SPREAD: how much a row's rounds disagree); one\n"
       "tune runs at a time on the machine, another waits. A result whose rounds disagree is marked\n"
       "NOISY and stored as provisional: the tuning DB answers it while the machine is busy and\n"
       "measures it again at the first question asked while it is quiet (PRISM_TUNE_PROVISIONAL=keep:\n"
       "never on its own). A repeated question is answered from the tuning DB at once (`--fresh`\n"
       "measures again). Where the eager baseline beats every candidate timed, a note says so.\n"
       "A progress bar shows the phases; Ctrl-C cancels.",
       CommandSpec::Arg::Program, {}, &Session::tune},
      {"code", "code NAME [K] [DIM=VALUE...] [--target T] [--dump-after PASS]", "print a kernel's generated source",
       "Without dims: those of your last `tune NAME` (else the latest tune by any client; the\n"
       "header line says which). Without K: the best candidate of that tune, else (not tuned at\n"
       "those dims) the family the cost model ranks first. With K: family K, at its tuned sizes\n"
       "when it was timed, else at the cost model's choice (give the dims if NAME was not tuned).\n"
       "--target cuda prints the CUDA source (no GPU needed: sizes from the cost model for this\n"
       "machine's GPU or an H100's data sheet, the launches in a comment). --json prints an object\n"
       "with `source`. --dump-after PASS prints what instantiate (the family at its sizes), lower\n"
       "(the kernel IR the backend prints) or print (the source) left, before the source.",
       CommandSpec::Arg::Program, {}, &Session::code},
      {"export", "export NAME FILE [K] [DIM=VALUE...]", "write a kernel's source and a C header to files",
       "Writes FILE (the source) and FILE with the extension .h (a C header with the tensors'\n"
       "shapes), so the kernel can be called from your code. The kernel is named after the program\n"
       "and its sizes (prism_rms_linear_d4096_n8), so that several exports link into one program.",
       CommandSpec::Arg::Program, {}, &Session::export_kernel},
      {"batch", "batch MANIFEST [--fresh]", "tune a model's programs at every size it lists, as one batch",
       "MANIFEST is JSON: {\"programs\": [{\"program\": NAME, \"file\": PATH, \"bindings\": [{\"n\": 1,\n"
       "\"d\": 4096}, …], \"targets\": [\"cpu\"], \"top\": 8}, …]} (files relative to the manifest;\n"
       "\"targets\" and \"top\" may be given once for all). Each program × bindings × target is a job:\n"
       "each program is searched once, a job the tuning DB has answered measures nothing (so a\n"
       "batch that was stopped resumes where it stopped; --fresh measures every job again), a job\n"
       "that fails is reported and the batch goes on. A progress bar shows the jobs done, failed\n"
       "and left; the table lists each job's result.",
       CommandSpec::Arg::Path, {}, &Session::batch},
      {"db", "db export FILE | db import FILE", "write the tuning DB to a file, or merge one in",
       "`db export FILE` writes every tuning result the daemon holds to FILE; `db import FILE`\n"
       "merges such a file (another machine's, a batch's) into this daemon's tuning DB. Each result\n"
       "is filed under the question it answers: the program, the dims, the target with its device\n"
       "model and toolchain, and the prism that tuned it, so a merged DB never answers one machine's\n"
       "question with another's measurement. Importing a file twice adds nothing.",
       CommandSpec::Arg::Subcommand, {"export", "import"}, &Session::tuning_db},
      {"daemon", "daemon status|stop", "show the daemon's status, or stop it",
       "`daemon status` prints the daemon's version, pid, uptime, clients and documents.\n"
       "`daemon stop` shuts the daemon down; the next `prism` starts a new one.",
       CommandSpec::Arg::Subcommand, {"status", "stop"}, &Session::daemon},
      {"help", "help [COMMAND|ops]", "list the commands, explain one, or list the language's ops",
       "`help ops` lists every op and operator a program can write, with its arguments and what it\n"
       "computes (PyTorch's spellings included: x.T, x ** 2, where, clamp, dim=).",
       CommandSpec::Arg::None, {}, &Session::help},
      {"quit", "quit", "leave the REPL (also: exit, Ctrl-D)", "", CommandSpec::Arg::None, {}, &Session::quit},
  };
  return table;
}

const CommandSpec* find_command(std::string_view name) {
  if (name == "exit") name = "quit";
  for (const auto& c : command_table())
    if (c.name == name) return &c;
  return nullptr;
}

namespace {
// A usage without its options ("search NAME [options]"): `help COMMAND` lists them.
std::string short_usage(const std::string& usage) {
  const size_t options = usage.find(" [--");
  return options == std::string::npos ? usage : usage.substr(0, options) + " [options]";
}
}  // namespace

std::string help_overview(int columns) {
  Table t({"COMMAND", "WHAT IT DOES"});
  t.wrap_last();
  for (const auto& c : command_table()) t.add({short_usage(c.usage), c.summary});
  std::string out = t.render("", columns) + "\n";
  for (const char* paragraph : {"Type or paste a `program NAME(...) { ... }` block to define a program.",
                                "`help COMMAND` explains one command, `help ops` lists the ops. Tab completes commands and program names."})
    for (const std::string& line : wrap_words(paragraph, columns > 0 ? size_t(columns - 1) : SIZE_MAX)) out += line + "\n";
  return out;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& others) {
  std::vector<std::string> names = others;
  names.push_back("exit");
  for (const auto& c : command_table()) names.push_back(c.name);
  const auto near = nearest_name(name, names);
  return near ? "; did you mean '" + *near + "'?" : "";
}

std::string help_ops(int columns) {
  Table t({"OP", "WHAT IT COMPUTES"});
  t.wrap_last();
  for (const auto& [signature, summary] : language_reference()) t.add({signature, summary});
  return t.render("", columns);
}

std::string help_for(std::string_view name, int columns) {
  if (name == "ops") return help_ops(columns);
  const CommandSpec* c = find_command(name);
  if (!c) return {};
  std::string out = "usage: " + c->usage + "\n" + c->summary + "\n";
  if (!c->details.empty()) out += "\n" + c->details + "\n";
  return out;
}

std::string usage_error(const std::string& command, const std::string& problem) {
  const CommandSpec* spec = find_command(command);
  return problem + (spec ? "\nusage: " + spec->usage : "");
}

bool parse_int(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  size_t used = 0;
  try {
    out = std::stoll(s, &used, 10);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size();
}

}  // namespace prism::repl
