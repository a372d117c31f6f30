#include "engine/backend/backend.h"

#include <algorithm>

#include "engine/backend/lower.h"
#include "engine/error.h"
#include "engine/util/text.h"

namespace prism::backend {

Build make_build(const std::string& what, const std::function<void(Build&)>& make) {
  Build b;
  try {
    make(b);
  } catch (const std::exception& e) {
    b = Build{};
    b.error = what + ": " + e.what();
  }
  return b;
}

Build Backend::fault(const std::string& kind) const {
  Build b;
  b.error = "no '" + kind + "' fault is planted on the " + name();
  return b;
}

kir::Program Backend::kernel_ir(const sgraph::Instance& instance, const TargetDescription&, const Schedule&) const {
  return lower(instance, LowerOptions{});
}

std::string Backend::serve(WorkerCall&) const { return std::string("error the ") + name() + " backend runs nothing in the worker"; }

std::string Backend::export_source(const Build& generated, const std::string&) const { return generated.source; }

std::string Backend::header_declarations(const std::string&, const std::string&) const { return ""; }

std::string Backend::library(const Build&, const TargetDescription&, const CompileSettings&) const {
  throw Error(Error::Kind::InvalidArgument, std::string("the ") + name() + " target gives no kernel library to call yet; the CPU's does (target \"cpu\")");
}

std::string schedule_text(const Schedule& schedule) { return schedule.empty() ? "default" : key_values(schedule); }

std::vector<Schedule> Backend::schedules(const TargetDescription&) const { return {Schedule{}}; }

Schedule Backend::resolve_schedule(const Schedule& schedule, const TargetDescription& target) const {
  const std::vector<Schedule> offered = schedules(target);
  if (schedule.empty()) return offered.front();
  if (std::find(offered.begin(), offered.end(), schedule) != offered.end()) return schedule;
  std::string names;
  for (const Schedule& s : offered) names += (names.empty() ? "" : ", ") + schedule_text(s);
  throw Error(Error::Kind::InvalidArgument, std::string("the ") + name() + " target has no schedule " + schedule_text(schedule) + " (it has " + names + ")");
}

std::optional<TargetDescription> Backend::scheduled_target(const Schedule&, const TargetDescription&) const { return std::nullopt; }

std::string Backend::features_text(const TargetDescription&) const { return ""; }

void Backend::read_features(std::string_view text, TargetDescription&) const {
  if (!parse_feature_words(text).empty())
    throw Error(Error::Kind::InvalidArgument, std::string("the ") + name() + " target has no features: '" + std::string(text) + "'");
}

}  // namespace prism::backend
