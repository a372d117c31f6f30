// The backends prism tunes on, by target: the one place that knows them all.
#pragma once
#include "engine/backend/backend.h"

namespace prism::tune {

// The backend of `target`; backends hold no state, so one serves every caller.
const backend::Backend& backend_for(backend::Target target);

}  // namespace prism::tune
