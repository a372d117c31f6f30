// CSV as RFC 4180 writes it: fields separated by commas, records by newlines; a field holding a
// comma, a quote, a newline or a carriage return is quoted, its quotes doubled.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace prism {

// One record, ended by "\n".
std::string csv_record(const std::vector<std::string>& fields);

// Every record of `text`, each with its 1-based line (where it starts); a final newline ends the
// last record. Throws Error{InvalidArgument} naming the line of a quote left open or of text
// after a closing quote.
struct CsvRecord {
  int line = 0;
  std::vector<std::string> fields;
};
std::vector<CsvRecord> parse_csv(std::string_view text);

}  // namespace prism
