// The backends prism tunes on: the one place that knows them all. Each backend has a Target, its
// place in the order of registration: the built-in ones first (one line each in backends.cpp, in
// the order of their folders' kTarget), then any a program registers itself (the tests' scalar
// backend, tests/backends/scalar). The tuner, the roofline, the cost model, the workspace, the
// protocol and prism-runner reach a backend only through here, and never name one
// (docs/architecture.md, "Adding a backend").
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/backend.h"

namespace prism::tune {

// The backend of `target`; backends hold no state, so one serves every caller. Throws
// Error{InvalidArgument} for a target no backend has.
const backend::Backend& backend_for(backend::Target target);

// Every registered target, in the order of registration.
std::vector<backend::Target> registered_targets();

// A backend registered at run time (the tests' scalar backend, tests/backends/scalar), listed
// while the registration lives: its end takes the backend out of every list and lookup (a target
// is never given to another backend, and asking for it afterwards is an error). The backend itself
// stays in memory until the process ends, so that a reference taken before cannot dangle.
class Registration {
 public:
  explicit Registration(backend::Target target) : target_(target) {}
  Registration(Registration&& other) noexcept : target_(other.target_), live_(other.live_) { other.live_ = false; }
  Registration& operator=(Registration&&) = delete;
  ~Registration();
  backend::Target target() const { return target_; }

 private:
  backend::Target target_;
  bool live_ = true;
};

// Registers the backend `make` builds for the target it is given (the next one): the one line a
// backend of a program's own needs. Throws Error{InvalidArgument} when a backend of the same name
// is registered already.
Registration register_backend(const std::function<std::unique_ptr<backend::Backend>(backend::Target)>& make);

// How people and clients name a target: its backend's name ("cpu", "cuda").
const char* target_name(backend::Target target);
// The one parser of target names; none for a name that no backend has.
std::optional<backend::Target> parse_target(std::string_view name);
// "cpu, cuda": the names parse_target accepts, for messages.
std::string target_names();

}  // namespace prism::tune
