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
#include <future>
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

// `loaded` against the same tune on a quiet machine: within a factor 1.5, or noisy and not stored.
// The quiet reference is a tune before the loaded one and a tune after it: on a 2-core VM two quiet
// tunes minutes apart have differed by 1.6x (gated_mlp 5.2x and 8.1x, every round of each agreeing:
// the eager baseline took 0.65 ms in some spells and 0.34-0.42 ms in others), so the loaded
// speedup must lie within 1.5x of the range the quiet ones span. Two samples can miss that range
// (rms_linear quiet 5.1x and 3.9x, then 8.2x for a tune that only waited in the queue, so ran on a
// quiet machine too): where the loaded speedup lies outside, up to four more quiet tunes widen the
// sample before the check fails (docs/testing.md, "Timing checks"). A quiet tune flagged noisy still counts: its rounds disagreed
// with nothing of ours running, so its speedup is one this machine gives unloaded.
void check_trustworthy(const ReplFixture& f, const Question& q, const json& before, const json& loaded, const json& after) {
  INFO(q.program << " quiet " << before["speedup"] << " (" << before["measured"]["contention"] << ") and " << after["speedup"] << " ("
                 << after["measured"]["contention"] << "), loaded " << loaded["speedup"] << " (" << loaded["measured"]["contention"] << ")");
  if (loaded["noisy"].get<bool>()) {
    // Not stored: the DB answers with a quiet run's measurement, or with nothing.
    json again = tune(f, q, false);
    CHECK((!again["fromDb"].get<bool>() || again["measured"]["at"] == before["measured"]["at"] ||
           again["measured"]["at"] == after["measured"]["at"]));
    return;
  }
  std::vector<double> quiet;
  for (const json* r : {&before, &after}) quiet.push_back((*r)["speedup"].get<double>());
  const double speedup = loaded["speedup"].get<double>();
  auto inside = [&] {
    const auto [lo, hi] = std::minmax_element(quiet.begin(), quiet.end());
    return speedup < *hi * 1.5 && speedup > *lo / 1.5;
  };
  for (int more = 0; more < 4 && !inside(); ++more) {
    quiet.push_back(tune(f, q)["speedup"].get<double>());
  }
  std::string sample;
  for (double v : quiet) sample += std::to_string(v) + " ";
  INFO("quiet speedups " << sample);
  CHECK(inside());
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
  const json quiet_rms = tune(f, kRms), quiet_mlp = tune(f, kMlp);

  auto rms = std::async(std::launch::async, [&] { return tune(f, kRms); });
  auto mlp = std::async(std::launch::async, [&] { return tune(f, kMlp); });
  const json loaded_rms = rms.get(), loaded_mlp = mlp.get();
  // One tune at a time on the machine: the second waited for the first.
  CHECK((loaded_rms["measured"]["queued"].get<bool>() || loaded_mlp["measured"]["queued"].get<bool>()));
  const json after_rms = tune(f, kRms), after_mlp = tune(f, kMlp);
  check_trustworthy(f, kRms, quiet_rms, loaded_rms, after_rms);
  check_trustworthy(f, kMlp, quiet_mlp, loaded_mlp, after_mlp);
}

TEST_CASE("a load that starts and stops during a tune: the ratio holds or the result says it is noisy", "[repl][e2e][tune][load]") {
  ReplFixture f;
  REQUIRE(f.prism({"-c", "open " + example("gated_mlp")}).exit_code == 0);
  const json quiet = tune(f, kMlp);

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
  INFO("attempts " << result["measured"]["attempts"] << ", other processes " << result["measured"]["foreignCores"] << " cores");
  check_trustworthy(f, kMlp, quiet, result, tune(f, kMlp));
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
