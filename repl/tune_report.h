// The text `tune` prints for a tune/run result (docs/protocol.md): the machine, the summary row,
// the timed candidates with the cost model's ranks, how they were timed. A function of the result
// alone, so that what users read is tested without a daemon or a machine's timings.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "repl/format.h"

namespace prism::repl {

// "d=1024 n=8" from {"d": 1024, "n": 8}; "-" when empty.
std::string sizes_of(const nlohmann::json& sizes);
// A row's sizes and, where the backend chose one, its schedule: "g1=8 threads=256".
std::string sizes_and_schedule(const nlohmann::json& row);

// Its tables fit `columns` (a terminal's width; 0: no limit), leaving out the columns read least.
std::string tune_report(const nlohmann::json& result, const std::string& program, int columns = Table::terminal_columns());

}  // namespace prism::repl
