// Speedups you can trust and answers that name their question (issue 14): two REPL clients
// tuning at once on one daemon, a load that starts and stops during a tune (each reported speedup
// within a factor 1.5 of the same tune on a quiet machine, or the result says it is noisy and is
// not stored), and `code`/`export` without dims answering about the client's own last tune.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include "repl/repl_fixture.h"

using nlohmann::json;
using prism::test::example;
using prism::test::json_lines;
using prism::test::ReplFixture;

namespace {

struct Question {
  std::string program, dims;
};
const Question kRms{"rms_linear", "n=8 d=512"};
// Not d=256: there the eager baseline is ten ops of about 10 us, bound by waking the OpenMP
// threads, and this VM moved its time by 2x between two quiet runs minutes apart (speedups 4.5 and
// 9.1) once f16 loops vectorized; 1 run in 3 then failed the 1.5x check with no load in sight.
const Question kMlp{"gated_mlp", "n=8 d=512"};

json tune(const ReplFixture& f, const Question& q, bool fresh = true) {
  auto r = f.prism({"--json", "-c", "tune " + q.program + " " + q.dims + " --top 4" + (fresh ? " --fresh" : "")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto lines = json_lines(r.out);
  REQUIRE(lines.size() == 1);
  REQUIRE(lines[0]["best"].is_object());
  return lines[0];
}

// Whether `loaded` holds against the same tune on a quiet machine: noisy and not stored, or within
// a factor 1.5 of the range the quiet tunes in `quiet` span. On a 2-core VM two quiet tunes minutes
// apart have differed by 1.6x to 2.7x with every round of each agreeing: the eager baseline has
// spells of 3x its time (rms_linear 0.11 ms, then 0.33 ms) that last from seconds to minutes and
// come with no load of ours, the prism-runner alone shows them (docs/testing.md, "Timing
// checks"). Where the loaded speedup lies outside, up to two more quiet tunes widen the sample; the
// caller runs the loaded tune again before it fails (a defect distorts every loaded run, a spell
// one of them). A quiet tune flagged noisy still counts: its rounds disagreed with nothing of ours
// running, so its speedup is one this machine gives unloaded.
bool holds(const ReplFixture& f, const Question& q, const json& loaded, std::vector<json>& quiet, std::string& seen) {
  if (loaded["noisy"].get<bool>()) {
    // Kept only as provisional, never in place of a quiet run's answer: the DB answers with a quiet
    // run's measurement, with the loaded one marked provisional where it holds none, or with
    // nothing (measured again).
    json again = tune(f, q, false);
    bool quiet_stored = false, answered = !again["fromDb"].get<bool>();
    for (const json& r : quiet) {
      quiet_stored = quiet_stored || !r["noisy"].get<bool>();
      answered = answered || again["measured"]["at"] == r["measured"]["at"];
    }
    CHECK((answered || (!quiet_stored && again["provisional"].get<bool>())));
    return true;
  }
  const double speedup = loaded["speedup"].get<double>();
  auto inside = [&] {
    auto by_speedup = [](const json& a, const json& b) { return a["speedup"].get<double>() < b["speedup"].get<double>(); };
    const auto [lo, hi] = std::minmax_element(quiet.begin(), quiet.end(), by_speedup);
    return speedup < (*hi)["speedup"].get<double>() * 1.5 && speedup > (*lo)["speedup"].get<double>() / 1.5;
  };
  for (int more = 0; more < 2 && !inside(); ++more) quiet.push_back(tune(f, q));
  const json& m = loaded["measured"];
  seen += q.program + " loaded " + std::to_string(speedup) + " (" + m["contention"].get<std::string>() + "; " + m["attempts"].dump() +
          " attempts, other processes " + m["foreignCores"].dump() + " cores), quiet";
  for (const json& r : quiet) seen += " " + std::to_string(r["speedup"].get<double>());
  seen += "\n";
  return inside();
}

// Runs `loaded` (which returns its tunes' results, each with its question) until every result
// holds against the quiet tunes of its question, at most three times.
void check_trustworthy(const ReplFixture& f, std::map<std::string, std::vector<json>>& quiet,
                       const std::function<std::vector<std::pair<Question, json>>()>& loaded) {
  std::string seen;
  bool ok = false;
  for (int run = 0; run < 3 && !ok; ++run) {
    ok = true;
    for (const auto& [q, result] : loaded()) ok = holds(f, q, result, quiet[q.program], seen) && ok;
  }
  INFO(seen);
  CHECK(ok);
}

// Every core busy while `running` holds.
class Load {
 public:
  void start() {
    running_ = true;
    for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i)
      threads_.emplace_back([this] {
        volatile double x = 0;
        while (running_) x = x + 1;
      });
  }
  void stop() {
    running_ = false;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  ~Load() { stop(); }

 private:
  std::atomic<bool> running_{false};
  std::vector<std::thread> threads_;
};

}  // namespace

TEST_CASE("two tunes at once on one daemon: one waits for the other, and both ratios hold", "[repl][e2e][tune][load]") {
  ReplFixture f;
  auto open = f.prism({"-c", "open " + example("rms_linear") + "; open " + example("gated_mlp")});
  REQUIRE(open.exit_code == 0);
  std::map<std::string, std::vector<json>> quiet = {{kRms.program, {tune(f, kRms)}}, {kMlp.program, {tune(f, kMlp)}}};

  check_trustworthy(f, quiet, [&] {
    auto rms = std::async(std::launch::async, [&] { return tune(f, kRms); });
    auto mlp = std::async(std::launch::async, [&] { return tune(f, kMlp); });
    const json loaded_rms = rms.get(), loaded_mlp = mlp.get();
    // One tune at a time on the machine: the second waited for the first.
    CHECK((loaded_rms["measured"]["queued"].get<bool>() || loaded_mlp["measured"]["queued"].get<bool>()));
    quiet[kRms.program].push_back(tune(f, kRms));
    quiet[kMlp.program].push_back(tune(f, kMlp));
    return std::vector<std::pair<Question, json>>{{kRms, loaded_rms}, {kMlp, loaded_mlp}};
  });
}

TEST_CASE("a load that starts and stops during a tune: the ratio holds or the result says it is noisy", "[repl][e2e][tune][load]") {
  ReplFixture f;
  REQUIRE(f.prism({"-c", "open " + example("gated_mlp")}).exit_code == 0);
  std::map<std::string, std::vector<json>> quiet = {{kMlp.program, {tune(f, kMlp)}}};

  check_trustworthy(f, quiet, [&] {
    // Every core busy for 0.3 s, then idle for 0.3 s, and so on until the tune ends: the load
    // starts and stops many times within its rounds.
    auto loaded = std::async(std::launch::async, [&] { return tune(f, kMlp); });
    Load load;
    for (bool on = true; loaded.wait_for(std::chrono::milliseconds(300)) != std::future_status::ready; on = !on) {
      if (on) load.start();
      else load.stop();
    }
    load.stop();
    const json result = loaded.get();
    quiet[kMlp.program].push_back(tune(f, kMlp));
    return std::vector<std::pair<Question, json>>{{kMlp, result}};
  });
}

namespace {

size_t stored_tunes(const ReplFixture& f) {
  const std::filesystem::path dir = f.dir() / "state/prism/tune";
  size_t n = 0;
  if (std::filesystem::exists(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path().extension() == ".tune";
  return n;
}

}  // namespace

TEST_CASE("code and export without dims answer about this client's last tune, and say so", "[repl][e2e][tune]") {
  ReplFixture f;
  f.extra_env["PRISM_TUNE_NOISE_LIMIT"] = "off";  // each tune is stored: the test waits for the files
  REQUIRE(f.prism({"-c", "open " + example("rms_linear")}).exit_code == 0);
  // Client A reads its commands from a FIFO, so that it can wait while client B tunes.
  const std::string fifo = f.dir() / "a.in";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto a = std::async(std::launch::async, [&] {
    return prism::test::run_process({"sh", "-c", "exec \"$0\" --socket \"$1\" --json < \"$2\"", prism::test::bin("prism"), f.socket(), fifo}, "",
                                    f.env(), std::chrono::seconds(120));
  });
  std::ofstream to_a(fifo);
  to_a << "tune rms_linear n=4 d=64 --top 2" << std::endl;
  for (int i = 0; i < 600 && stored_tunes(f) < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(stored_tunes(f) == 1);
  // Client B tunes the same program at other dims: the latest tune is B's now.
  REQUIRE(f.prism({"-c", "tune rms_linear n=8 d=64 --top 2"}).exit_code == 0);
  to_a << "code rms_linear" << std::endl << "export rms_linear " << (f.dir() / "k.cpp") << std::endl;
  to_a.close();
  const prism::ProcessResult ra = a.get();
  INFO(ra.err);
  REQUIRE(ra.exit_code == 0);
  auto lines = json_lines(ra.out);
  REQUIRE(lines.size() == 3);
  CHECK(lines[1]["bindings"] == json({{"n", 4}, {"d", 64}}));
  CHECK(lines[1]["basis"] == "your tune");
  CHECK(lines[1]["candidate"] == lines[0]["best"]["candidate"]);
  CHECK(lines[2]["bindings"] == json({{"n", 4}, {"d", 64}}));

  // Client C never tuned: the latest tune of any client, named as such.
  auto c = f.prism({"-c", "code rms_linear"});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  CHECK_THAT(c.out, Catch::StartsWith("// rms_linear candidate "));
  CHECK_THAT(c.out, Catch::Contains("at d=64 n=8 (the latest tune, by any client) on the CPU, sizes "));
  auto e = f.prism({"-c", "export rms_linear " + (f.dir() / "c.cpp")});
  CHECK_THAT(e.out, Catch::Contains(": rms_linear candidate "));
  CHECK_THAT(e.out, Catch::Contains("(tuned)"));
}
