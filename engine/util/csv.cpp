#include "engine/util/csv.h"

#include "engine/error.h"

namespace prism {

namespace {

bool needs_quotes(const std::string& field) { return field.find_first_of(",\"\n\r") != std::string::npos; }

}  // namespace

std::string csv_record(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    if (!needs_quotes(fields[i])) {
      out += fields[i];
      continue;
    }
    out += '"';
    for (char c : fields[i]) out.append(c == '"' ? 2 : 1, c);
    out += '"';
  }
  return out + "\n";
}

std::vector<CsvRecord> parse_csv(std::string_view text) {
  std::vector<CsvRecord> records;
  int line = 1;
  size_t i = 0;
  while (i < text.size()) {
    CsvRecord record{line, {}};
    std::string field;
    bool quoted = false, after_quote = false;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (quoted) {
        if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += text[++i];
        else if (c == '"') quoted = false, after_quote = true;
        else field += c, line += c == '\n';
        continue;
      }
      if (c == ',' || c == '\n') {
        record.fields.push_back(std::move(field));
        field.clear();
        after_quote = false;
        if (c == '\n') break;
      } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
        continue;
      } else if (c == '"' && field.empty() && !after_quote) {
        quoted = true;
      } else if (after_quote) {
        throw Error(Error::Kind::InvalidArgument, "CSV line " + std::to_string(line) + ": text after a closing quote");
      } else {
        field += c;
      }
    }
    if (quoted) throw Error(Error::Kind::InvalidArgument, "CSV line " + std::to_string(record.line) + ": a quote is never closed");
    if (i == text.size() && (text.empty() || text.back() != '\n')) record.fields.push_back(std::move(field));
    ++i, ++line;
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace prism
