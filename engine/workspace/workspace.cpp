// The Workspace facade: open documents, their compiled programs, and runs of the interpreter.
// Parsing and checking happen under the mutex; a run copies a shared_ptr to the immutable
// compiled program under the lock and interprets it without holding the lock.
#include "engine/workspace/workspace.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <exception>
#include <new>
#include <set>

#include "engine/interp/interpreter.h"
#include "engine/io/npy.h"
#include "engine/ir/lower_composites.h"
#include "engine/ir/print.h"
#include "engine/lang/compile.h"
#include "engine/lang/lexer.h"
#include "engine/lang/suggest.h"
#include "engine/pipeline.h"
#include "engine/tune/tuner.h"
#include "engine/util/text.h"

namespace prism {

namespace {

struct CompiledProgram {
  Program source;
  Program lowered;
  ProgramSummary summary;
  std::vector<TensorView> values;
  std::string lowered_text;
};

struct Document {
  std::string text;
  int64_t version = 0;
  Diagnostics diagnostics;
  std::vector<std::shared_ptr<const CompiledProgram>> programs;  // compiled and not duplicates
};

TensorView view_of(const Value& v) {
  TensorView t;
  t.name = v.name;
  t.dtype = dtype_name(v.type.dtype);
  for (const Dim& d : v.type.shape) t.shape.push_back(d.str());
  if (v.op != Op::Input) t.op = op_spelling(v);
  if (v.domain != Domain::Any) t.domain = domain_suffix(v.domain).substr(1);
  t.pos = v.pos.begin;
  return t;
}

std::shared_ptr<const CompiledProgram> compile_program(Program program, const std::string& uri) {
  auto c = std::make_shared<CompiledProgram>();
  c->lowered = lower_composites(program);
  c->lowered_text = print_program(c->lowered);
  c->summary.name = program.name;
  c->summary.uri = uri;
  c->summary.pos = program.pos;
  c->summary.dims = program.dims;
  for (int id : program.inputs) c->summary.inputs.push_back(view_of(program.value(id)));
  for (int id : program.outputs) c->summary.outputs.push_back(view_of(program.value(id)));
  for (const Value& v : program.values)
    if (v.named && v.op != Op::Input) c->values.push_back(view_of(v));
  c->source = std::move(program);
  return c;
}

std::string stem_of(const std::string& path) {
  const std::string ext = ".npy";
  if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0)
    return path.substr(0, path.size() - ext.size());
  return path;
}

}  // namespace

struct Workspace::Impl {
  std::map<std::string, Document> docs;
  ResidentEGraph egraph;
  // What the e-graph holds: program name -> the compiled program its term came from.
  std::map<std::string, std::shared_ptr<const CompiledProgram>> in_egraph;
  // Search results: program name -> the last result (with the version it was searched at).
  std::map<std::string, SearchResult> searches;

  // Where `name` is defined by an open document other than `except_uri`.
  std::optional<std::pair<std::string, int>> defined_elsewhere(const std::string& name, const std::string& except_uri) const {
    for (const auto& [uri, doc] : docs) {
      if (uri == except_uri) continue;
      for (const auto& p : doc.programs)
        if (p->source.name == name) return std::make_pair(uri, p->source.pos.begin.line);
    }
    return std::nullopt;
  }

  std::shared_ptr<const CompiledProgram> find(const std::string& name) const {
    for (const auto& [uri, doc] : docs)
      for (const auto& p : doc.programs)
        if (p->source.name == name) return p;
    return nullptr;
  }

  std::vector<std::string> program_names() const {
    std::vector<std::string> names;
    for (const auto& [uri, doc] : docs)
      for (const auto& p : doc.programs) names.push_back(p->source.name);
    return names;
  }

  [[noreturn]] void unknown_program(const std::string& name) const {
    std::vector<std::string> names = program_names();
    std::string msg = "unknown program '" + name + "'";
    if (auto near = nearest_name(name, names)) msg += "; did you mean '" + *near + "'?";
    // A daemon serving a model holds hundreds of programs: the first few are named, the rest counted.
    constexpr size_t kNamed = 8;
    const size_t more = names.size() > kNamed ? names.size() - kNamed : 0;
    names.resize(names.size() - more);
    const std::string rest = more ? " and " + std::to_string(more) + " more; `programs` lists them" : "";
    msg += names.empty() ? " (no programs are open)" : " (known programs: " + join(names, ", ") + rest + ")";
    throw Error(Error::Kind::NotFound, msg, name);
  }

  // Compiles `text` into `doc`; never throws.
  // `against_others`: also a clash with a program of another document is an error.
  void analyze(const std::string& uri, Document& doc, bool against_others = true) {
    for (const auto& p : doc.programs) searches.erase(p->source.name);  // the text changed
    doc.programs.clear();
    doc.diagnostics.clear();
    try {
      CompileResult r = compile_text(doc.text, uri);
      doc.diagnostics = std::move(r.diagnostics);
      std::map<std::string, int> here;  // name -> line, in this document
      for (auto& program : r.programs) {
        const std::string name = program.name;
        SourceRange pos = program.pos;
        if (auto it = here.find(name); it != here.end()) {
          doc.diagnostics.push_back({uri, pos, Severity::Error, "program '" + name + "' is already defined (line " + std::to_string(it->second) + ")"});
          continue;
        }
        here[name] = pos.begin.line;
        if (auto other = against_others ? defined_elsewhere(name, uri) : std::nullopt) {
          doc.diagnostics.push_back({uri, pos, Severity::Error,
                                     "program '" + name + "' is already defined in " + other->first + " (line " + std::to_string(other->second) + ")"});
          continue;
        }
        try {
          doc.programs.push_back(compile_program(std::move(program), uri));
        } catch (const std::exception& e) {
          doc.diagnostics.push_back({uri, pos, Severity::Error, std::string("internal error: ") + e.what()});
        }
      }
    } catch (const std::exception& e) {
      doc.programs.clear();
      doc.diagnostics.push_back({uri, {}, Severity::Error, std::string("internal error: ") + e.what()});
    }
    std::stable_sort(doc.diagnostics.begin(), doc.diagnostics.end(), [](const Diagnostic& a, const Diagnostic& b) {
      const SourcePos &x = a.range.begin, &y = b.range.begin;
      return x.line != y.line ? x.line < y.line : x.col < y.col;
    });
  }

  // `text` as `uri`'s new text keeps within kMaxDocumentBytes and, with the other documents,
  // kMaxOpenTextBytes; throws Error{InvalidArgument} otherwise.
  void check_size(const std::string& uri, const std::string& text) const {
    if (text.size() > kMaxDocumentBytes)
      throw Error(Error::Kind::InvalidArgument, "the text of '" + uri + "' is " + std::to_string(text.size()) +
                                                    " bytes, more than the limit of " + std::to_string(kMaxDocumentBytes) + " (16 MiB)");
    size_t total = text.size();
    for (const auto& [other, doc] : docs)
      if (other != uri) total += doc.text.size();
    if (total > kMaxOpenTextBytes)
      throw Error(Error::Kind::InvalidArgument, "the open documents would hold " + std::to_string(total) + " bytes, more than the limit of " +
                                                    std::to_string(kMaxOpenTextBytes) + " (64 MiB); close some first");
  }

  DocumentState state(const std::string& uri, const Document& doc) const {
    DocumentState s;
    s.uri = uri;
    s.version = doc.version;
    s.diagnostics = doc.diagnostics;
    for (const auto& p : doc.programs) s.programs.push_back(p->source.name);
    return s;
  }
};

Workspace::Workspace() : tune_state_(make_tune_state()), impl_(std::make_unique<Impl>()) {}
Workspace::~Workspace() = default;

DocumentState Workspace::open(const std::string& uri, const std::string& text, int64_t version, bool replace, bool reject_errors) {
  std::lock_guard<std::mutex> lock(mutex_);
  impl_->check_size(uri, text);
  // Analyzed before anything changes. With `replace` the documents it clashes with are closed
  // below, so a clash with them is no error of its own.
  Document next;
  next.text = text;
  next.version = version;
  impl_->analyze(uri, next, /*against_others=*/!replace);
  if (reject_errors &&
      std::any_of(next.diagnostics.begin(), next.diagnostics.end(), [](const Diagnostic& d) { return d.severity == Severity::Error; })) {
    DocumentState state = impl_->state(uri, next);
    state.rejected = true;
    return state;
  }
  std::vector<std::string> replaced;
  if (replace) {
    std::set<std::string> defined;
    try {
      for (const auto& program : compile_text(text, uri).programs) defined.insert(program.name);
    } catch (const std::exception&) {
      // analyze() above reported it
    }
    for (auto it = impl_->docs.begin(); it != impl_->docs.end();) {
      bool clash = it->first != uri && std::any_of(it->second.programs.begin(), it->second.programs.end(),
                                                     [&](const auto& p) { return defined.count(p->source.name) > 0; });
      if (!clash) {
        ++it;
        continue;
      }
      for (const auto& p : it->second.programs) impl_->searches.erase(p->source.name);
      replaced.push_back(it->first);
      it = impl_->docs.erase(it);
    }
  }
  Document& doc = impl_->docs[uri];
  // The same text again (a batch reopening its files): its programs' searches still answer, now
  // for the new version; a changed text drops them.
  const bool same_text = doc.text == next.text;
  for (const auto& p : doc.programs) {
    auto found = impl_->searches.find(p->source.name);
    if (found == impl_->searches.end()) continue;
    if (same_text && found->second.version == doc.version) found->second.version = next.version;
    else impl_->searches.erase(found);
  }
  doc = std::move(next);
  DocumentState state = impl_->state(uri, doc);
  state.replaced = std::move(replaced);
  return state;
}

DocumentState Workspace::change(const std::string& uri, const std::string& text, int64_t version) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = impl_->docs.find(uri);
  if (it == impl_->docs.end()) throw Error(Error::Kind::NotFound, "no open document '" + uri + "'");
  if (version <= it->second.version)
    throw Error(Error::Kind::InvalidArgument, "version " + std::to_string(version) + " of '" + uri + "' is not greater than the current version " +
                                                  std::to_string(it->second.version));
  impl_->check_size(uri, text);
  it->second.text = text;
  it->second.version = version;
  impl_->analyze(uri, it->second);
  return impl_->state(uri, it->second);
}

void Workspace::close(const std::string& uri) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = impl_->docs.find(uri);
  if (it == impl_->docs.end()) throw Error(Error::Kind::NotFound, "no open document '" + uri + "'");
  for (const auto& p : it->second.programs) impl_->searches.erase(p->source.name);
  impl_->docs.erase(it);
}

std::optional<DocumentState> Workspace::document(const std::string& uri) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = impl_->docs.find(uri);
  if (it == impl_->docs.end()) return std::nullopt;
  return impl_->state(uri, it->second);
}

std::optional<std::string> Workspace::text(const std::string& uri) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = impl_->docs.find(uri);
  if (it == impl_->docs.end()) return std::nullopt;
  return it->second.text;
}

std::vector<std::string> Workspace::documents() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [uri, doc] : impl_->docs) out.push_back(uri);
  return out;
}

std::vector<ProgramSummary> Workspace::programs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ProgramSummary> out;
  for (const auto& [uri, doc] : impl_->docs)
    for (const auto& p : doc.programs) out.push_back(p->summary);
  return out;
}

namespace {

ProgramDetail detail_of(const CompiledProgram& p) {
  ProgramDetail d;
  d.summary = p.summary;
  d.values = p.values;
  d.signature = signature(p.source);
  d.lowered = p.lowered_text;
  return d;
}

}  // namespace

ProgramDetail Workspace::show(const std::string& program) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto p = impl_->find(program);
  if (!p) impl_->unknown_program(program);
  return detail_of(*p);
}

std::vector<ProgramDetail> Workspace::document_programs(const std::string& uri) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = impl_->docs.find(uri);
  if (it == impl_->docs.end()) throw Error(Error::Kind::NotFound, "no open document '" + uri + "'");
  std::vector<ProgramDetail> out;
  for (const auto& p : it->second.programs) out.push_back(detail_of(*p));
  std::sort(out.begin(), out.end(), [](const ProgramDetail& a, const ProgramDetail& b) { return a.summary.pos.begin.line < b.summary.pos.begin.line; });
  return out;
}

namespace {

struct InputFile {
  std::string input;
  std::string path;
  Tensor tensor;
  const Value* value = nullptr;
};

// Fills `bindings` from the shapes of input files: a dim written as a name (or a multiple of one
// name, like 2*d) takes its value from the file; contradictions name the dim and both sources.
void bind_from_files(const std::vector<InputFile>& files, DimBindings& bindings, std::map<std::string, std::string>& source) {
  bool progress = true;
  while (progress) {
    progress = false;
    for (const auto& f : files) {
      for (size_t i = 0; i < f.value->type.shape.size(); ++i) {
        const Dim& dim = f.value->type.shape[i];
        std::vector<std::string> syms = dim.symbols();
        if (syms.size() != 1) continue;
        const std::string& sym = syms[0];
        auto factor = (dim / Dim::symbol(sym)).constant_value();
        if (!factor) continue;
        Rational solved = Rational(f.tensor.shape[i]) / *factor;
        std::string here = "input '" + f.input + "' (" + f.path + ")";
        if (!solved.is_integer() || solved.num() <= 0)
          throw Error(Error::Kind::InvalidArgument, "dim '" + sym + "' cannot be " + solved.str() + " (from " + here + " where " + dim.str() + " = " +
                                                        std::to_string(f.tensor.shape[i]) + ")");
        auto it = bindings.find(sym);
        if (it == bindings.end()) {
          bindings[sym] = solved.num();
          source[sym] = here;
          progress = true;
        } else if (it->second != solved.num()) {
          throw Error(Error::Kind::InvalidArgument, "dim '" + sym + "' is " + std::to_string(it->second) + " from " + source[sym] + " but " +
                                                        std::to_string(solved.num()) + " from " + here);
        }
      }
    }
  }
}

OutputSummary summarize(const std::string& name, const Tensor& t, size_t head) {
  OutputSummary s;
  s.name = name;
  s.dtype = dtype_name(t.dtype);
  s.shape = t.shape;
  for (float v : t.data) {
    if (std::isnan(v)) ++s.nan;
    else if (std::isinf(v)) ++(v > 0 ? s.pos_inf : s.neg_inf);
    else s.sum += double(v), s.abs_sum += std::fabs(double(v));
  }
  for (size_t i = 0; i < head && i < t.data.size(); ++i) s.head.push_back(double(t.data[i]));
  return s;
}

}  // namespace

RunResult Workspace::run(const RunRequest& request, const CancelToken* cancel) const {
  std::shared_ptr<const CompiledProgram> compiled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    compiled = impl_->find(request.program);
    if (!compiled) impl_->unknown_program(request.program);
  }
  const Program& program = compiled->lowered;

  // Bindings: explicit ones first, then what input files determine.
  DimBindings bindings;
  std::map<std::string, std::string> source;
  for (const auto& [name, value] : request.bindings) {
    if (std::find(program.dims.begin(), program.dims.end(), name) == program.dims.end())
      throw Error(Error::Kind::InvalidArgument, "program '" + program.name + "' has no dim '" + name + "' (its dims: " + join(program.dims, ", ") + ")");
    if (value <= 0) throw Error(Error::Kind::InvalidArgument, "binding " + name + "=" + std::to_string(value) + " must be a positive integer");
    bindings[name] = value;
    source[name] = "the bindings";
  }
  std::vector<InputFile> files;
  int64_t read_bytes = 0;
  for (const auto& [input, path] : request.input_files) {
    const Value* value = nullptr;
    std::vector<std::string> names;
    for (int id : program.inputs) {
      names.push_back(program.value(id).name);
      if (program.value(id).name == input) value = &program.value(id);
    }
    if (!value) throw Error(Error::Kind::InvalidArgument, "program '" + program.name + "' has no input '" + input + "' (its inputs: " + join(names, ", ") + ")", input);
    // Each file is read only when it fits in what is left of the budget.
    int64_t left = memory_budget() - read_bytes;
    InputFile f{input, path, read_npy(path, size_t(std::max<int64_t>(left, 0))), value};
    read_bytes += f.tensor.size() * int64_t(sizeof(float));
    if (f.tensor.shape.size() != value->type.shape.size())
      throw Error(Error::Kind::InvalidArgument, "input '" + input + "' from " + path + " has shape " + shape_text(f.tensor.shape) + " but the program declares " +
                                                    type_str(value->type));
    files.push_back(std::move(f));
  }
  bind_from_files(files, bindings, source);
  std::vector<std::string> missing;
  for (const auto& d : program.dims)
    if (!bindings.count(d)) missing.push_back(d);
  if (!missing.empty()) {
    std::vector<std::string> quoted, give;
    for (const auto& d : missing) {
      quoted.push_back("'" + d + "'");
      give.push_back(d + "=...");
    }
    throw Error(Error::Kind::InvalidArgument, std::string(missing.size() == 1 ? "missing binding for dim " : "missing bindings for dims ") + join(quoted, ", ") +
                                                  " (give " + join(give, " ") + ")");
  }

  check_memory_budget("running '" + program.name + "' at " + tune::sizes_text(bindings), interpreter_bytes(program, bindings),
                      memory_budget());
  std::map<std::string, Tensor> inputs;
  for (auto& f : files) {
    std::vector<int64_t> want = concrete_shape(f.value->type.shape, bindings);
    if (f.tensor.shape != want)
      throw Error(Error::Kind::InvalidArgument, "input '" + f.input + "' from " + f.path + " has shape " + shape_text(f.tensor.shape) + " but the program expects " +
                                                    shape_str(f.value->type.shape) + " = " + shape_text(want));
    inputs[f.input] = std::move(f.tensor);
  }

  RunResult result;
  result.program = program.name;
  result.bindings = bindings;
  std::vector<Tensor> outputs;
  for (int id : program.inputs)
    if (!inputs.count(program.value(id).name)) result.random_inputs.push_back(program.value(id).name);
  try {
    draw_inputs(program, bindings, request.seed, inputs);
    auto start = std::chrono::steady_clock::now();
    outputs = interpret(program, bindings, inputs, cancel);
    result.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  } catch (const std::bad_alloc&) {
    throw Error(Error::Kind::Failed, "out of memory running '" + program.name + "' with these bindings");
  }

  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = program.value(program.outputs[i]).name;
    OutputSummary s = summarize(name, outputs[i], request.head);
    if (!request.output_file.empty()) {
      s.file = outputs.size() == 1 ? request.output_file : stem_of(request.output_file) + "." + name + ".npy";
      write_npy(s.file, outputs[i]);
    }
    result.outputs.push_back(std::move(s));
  }
  return result;
}

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

void Workspace::sync_egraph() const {
  std::lock_guard<std::mutex> sync(egraph_sync_);
  std::vector<std::shared_ptr<const CompiledProgram>> add;
  std::vector<std::string> drop;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::map<std::string, std::shared_ptr<const CompiledProgram>> now;
    for (const auto& [uri, doc] : impl_->docs)
      for (const auto& p : doc.programs) now[p->source.name] = p;
    for (const auto& [name, p] : impl_->in_egraph)
      if (!now.count(name)) drop.push_back(name);
    for (const auto& [name, p] : now) {
      auto it = impl_->in_egraph.find(name);
      if (it == impl_->in_egraph.end() || it->second != p) add.push_back(p);
    }
    impl_->in_egraph = std::move(now);
  }
  for (const auto& name : drop) impl_->egraph.drop_program(name);
  for (const auto& p : add) {
    try {
      impl_->egraph.set_program(p->source.name, p->lowered);
    } catch (const Error&) {
      impl_->egraph.drop_program(p->source.name);  // a program the terms cannot express (1-D matmul)
    }
  }
}

EquivResult Workspace::equivalent(const std::string& a, const std::string& b, const EquivLimits& limits, const CancelToken* cancel) {
  sync_egraph();
  Program pa, pb;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto ca = impl_->find(a), cb = impl_->find(b);
    if (!ca && !cb) {
      if (is_identifier(a)) impl_->unknown_program(a);
      if (is_identifier(b)) impl_->unknown_program(b);
      throw Error(Error::Kind::InvalidArgument, "at least one side of an equivalence must name a program (it gives the inputs of an inline expression)");
    }
    const Program& context = (ca ? ca : cb)->source;
    auto side = [&](const std::string& text, const std::shared_ptr<const CompiledProgram>& c) {
      if (c) return c->lowered;
      if (is_identifier(text) && std::none_of(context.inputs.begin(), context.inputs.end(), [&](int id) { return context.value(id).name == text; }))
        impl_->unknown_program(text);
      return compile_expression(context, text);
    };
    pa = side(a, ca);
    pb = side(b, cb);
  }
  return impl_->egraph.equivalent(pa, pb, limits, cancel);
}

EGraphStats Workspace::egraph_stats() const {
  sync_egraph();
  return impl_->egraph.stats();
}

// Results are stored per program name with the version they were searched at; an edit bumps the
// version, so a stale result is never returned. `threads` does not change what is found.
namespace {
bool same_question(SearchLimits a, SearchLimits b) {
  a.threads = b.threads = 0;
  return a == b;
}
}  // namespace

SearchResult Workspace::search(const std::string& program, const SearchLimits& limits, const CancelToken* cancel,
                               const std::function<void(const SearchProgress&)>& progress, pipeline::Dump* dump) {
  std::shared_ptr<const CompiledProgram> compiled;
  int64_t version = 0;
  // A dump of the search's own passes needs them run (pipeline.h); parsing's and normalizing's
  // are the compiled program's.
  const bool rerun = dump && dump->after() != pipeline::Pass::Parse && dump->after() != pipeline::Pass::Normalize;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    compiled = impl_->find(program);
    if (!compiled) impl_->unknown_program(program);
    version = impl_->docs.at(compiled->summary.uri).version;
    pipeline::dump_after(dump, pipeline::Pass::Parse, [&] { return print_program(compiled->source); });
    pipeline::dump_after(dump, pipeline::Pass::Normalize, [&] { return compiled->lowered_text; });
    if (auto it = impl_->searches.find(program); !rerun && it != impl_->searches.end() && it->second.version == version &&
                                                 same_question(it->second.limits, limits))
      return it->second;
  }
  // The same question searched before, by this daemon or another (search_store.h).
  const search::SearchStore store = search_store();
  const std::string key = store.enabled() ? search::search_key(compiled->lowered, limits) : "";
  std::optional<SearchResult> stored = rerun ? std::nullopt : store.get(key);
  if (!stored) check_memory_budget("searching '" + program + "'", search::search_memory_bytes(compiled->lowered), memory_budget());
  SearchResult r = stored ? std::move(*stored) : search::search_program(compiled->lowered, limits, cancel, progress, dump);  // no lock held
  if (!stored) store.put(key, r);
  r.program = program;
  r.version = version;
  r.limits = limits;
  std::lock_guard<std::mutex> lock(mutex_);
  impl_->searches[program] = r;
  return r;
}

std::pair<Program, int64_t> Workspace::lowered_program(const std::string& program) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto compiled = impl_->find(program);
  if (!compiled) impl_->unknown_program(program);
  return {compiled->lowered, impl_->docs.at(compiled->summary.uri).version};
}

std::optional<SearchResult> Workspace::search_result(const std::string& program) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto compiled = impl_->find(program);
  auto it = impl_->searches.find(program);
  if (!compiled || it == impl_->searches.end()) return std::nullopt;
  if (it->second.version != impl_->docs.at(compiled->summary.uri).version) return std::nullopt;
  return it->second;
}

}  // namespace prism
