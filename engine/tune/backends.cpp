#include "engine/tune/backends.h"

#include <deque>
#include <mutex>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/error.h"

namespace prism::tune {

namespace {

struct Registry {
  std::mutex mutex;
  std::deque<std::unique_ptr<backend::Backend>> backends;  // index: the target; null once its registration ended
  std::vector<std::unique_ptr<backend::Backend>> retired;  // those, kept so that references stay valid

  backend::Target add(const std::function<std::unique_ptr<backend::Backend>(backend::Target)>& make) {
    const backend::Target target{static_cast<int>(backends.size())};
    std::unique_ptr<backend::Backend> b = make(target);
    if (!b || b->target() != target) throw Error(Error::Kind::InvalidArgument, "a registered backend must take the target it is given");
    for (const auto& other : backends)
      if (other && std::string_view(other->name()) == b->name())
        throw Error(Error::Kind::InvalidArgument, std::string("a backend named '") + b->name() + "' is registered already");
    backends.push_back(std::move(b));
    return target;
  }
};

Registry& registry() {
  static Registry r;
  static std::once_flag built_in;
  std::call_once(built_in, [] {
    // The built-in backends, one line each, in the order of their folders' kTarget (cpu::kTarget is 0).
    r.add([](backend::Target t) { return std::make_unique<backend::cpu::CpuBackend>(t); });
    r.add([](backend::Target t) { return std::make_unique<backend::cuda::CudaBackend>(t); });
  });
  return r;
}

}  // namespace

const backend::Backend& backend_for(backend::Target target) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const int index = static_cast<int>(target);
  if (index < 0 || size_t(index) >= r.backends.size() || !r.backends[size_t(index)])
    throw Error(Error::Kind::InvalidArgument, "no backend has target " + std::to_string(index));
  return *r.backends[size_t(index)];
}

std::vector<backend::Target> registered_targets() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<backend::Target> out;
  for (const auto& b : r.backends)
    if (b) out.push_back(b->target());
  return out;
}

Registration register_backend(const std::function<std::unique_ptr<backend::Backend>(backend::Target)>& make) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return Registration(r.add(make));
}

Registration::~Registration() {
  if (!live_) return;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::unique_ptr<backend::Backend>& b = r.backends[size_t(target_)];
  r.retired.push_back(std::move(b));
}

const char* target_name(backend::Target target) { return backend_for(target).name(); }

std::optional<backend::Target> parse_target(std::string_view name) {
  for (backend::Target t : registered_targets())
    if (name == backend_for(t).name()) return t;
  return std::nullopt;
}

std::string target_names() {
  std::string names;
  for (backend::Target t : registered_targets()) names += (names.empty() ? "" : ", ") + std::string(backend_for(t).name());
  return names;
}

}  // namespace prism::tune
