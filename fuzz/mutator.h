// A deterministic, seeded mutator for the fuzzers: byte strings, program text with a dictionary of
// tokens, JSON-RPC messages (structure-aware) and LSP framing. The same seed gives the same
// mutations, so a finding is reproduced by its seed and iteration.
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace prism::fuzz {

// One write(2) of a send plan, after a pause of `delay_us` (headers and bodies split across writes).
struct Write {
  std::string bytes;
  int delay_us = 0;
};

// The bytes of one or more frames as they go out on a connection.
struct SendPlan {
  std::vector<Write> writes;
  bool regrouped = false;   // the framing was mutated: the daemon may cut the bytes into bodies differently
  bool poisoned = false;    // the daemon will take the bytes after this plan as a body (huge Content-Length)
  bool disconnect = false;  // close the connection abruptly after the last write
  std::string what;         // the framing mutation, in words
};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}
  // The mutator of iteration `i` of a run with `seed`: each iteration is reproducible on its own.
  static Mutator for_iteration(uint64_t seed, uint64_t i);

  // --- randomness ---
  uint64_t next() { return rng_(); }
  size_t below(size_t n) { return n == 0 ? 0 : size_t(rng_() % n); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }

  // --- bytes and text ---
  // 1 to `max_edits` edits: flip, insert, delete, duplicate, truncate, splice with a corpus entry.
  std::string mutate_bytes(std::string data, const std::vector<std::string>& corpus, int max_edits = 8);
  // Program text: byte edits plus dictionary tokens, line shuffles, identifier and number swaps.
  std::string mutate_text(std::string text, const std::vector<std::string>& corpus, const std::vector<std::string>& tokens);

  // --- JSON ---
  // A mutated JSON-RPC message from `body` (one of the corpus): field values replaced by extremes or
  // values of the wrong type, methods and ids changed, keys dropped or duplicated, deep nesting,
  // huge strings, lone surrogates, batches, notifications, truncation, and sometimes byte edits.
  std::string mutate_json(const std::string& body, const std::vector<std::string>& corpus);
  // Raw JSON texts the mutations insert (also used by the program fuzzer's dictionary).
  std::string extreme_number();
  std::string odd_string();
  std::string wrong_type_value();
  std::string any_id();
  std::string deep_nesting();
  std::string huge_string();

  // --- framing ---
  static std::string frame(const std::string& body);
  // All of `bodies` in one stream (several frames per write), one of them with a mutated header
  // when `mutate_header`; split across writes at random points, now and then cut short.
  SendPlan frame_plan(const std::vector<std::string>& bodies, bool mutate_header);

 private:
  std::string mutate_header(const std::string& body, SendPlan& plan);
  void split_writes(const std::string& bytes, SendPlan& plan);
  std::mt19937_64 rng_;
};

}  // namespace prism::fuzz
