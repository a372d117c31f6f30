// Helpers for passes that edit a lowered program by appending values and rerouting readers
// (lower_composites, defer_row_scales, one_pass_variance): a value appended with its inferred
// type, fresh names, readers moved to a replacement, and the live values in operand order after
// (the replaced values go, the appended ones move before their readers).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/program.h"

namespace prism {

// Appends op(operands) with its inferred type; its id, or -1 with `error` set when it does not
// type.
int append_value(Program& p, Op op, std::vector<int> operands, Attrs attrs, const SourceRange& pos, std::string* error = nullptr);

// `base`, or `base` with the first number that makes it a name no value of p has.
std::string fresh_name(const Program& p, const std::string& base);

// Every operand and output that is `from` becomes `to`, except in value `keep` (-1: none).
void replace_uses(Program& p, int from, int to, int keep = -1);

// Value `to` takes `from`'s place: its name (an output's is what the caller reads) and its
// readers; `from` gets `to`'s name.
void take_place(Program& p, int from, int to);

// Inputs stay (even unread ones: they are the program's parameters); every other value the
// outputs do not read is dropped, but a split's parts stay together, consecutive, while one is
// read: they are one statement (library_cut.h, kernel_cut.h and print.h read them so).
Program live_in_order(const Program& p);

// Applies `rewrite_one` (false: nothing left to rewrite) until it finds nothing, at most `limit`
// times, dropping dead values after each; none when it rewrote nothing.
std::optional<Program> rewrite_until_done(const Program& p, const std::function<bool(Program&)>& rewrite_one, int limit = 64);

}  // namespace prism
