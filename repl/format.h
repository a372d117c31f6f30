// Plain-text rendering for the REPL: aligned tables, diagnostics with a caret under the column.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace prism::repl {

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // The last column's text wraps at spaces onto lines of its own, under its start, instead of
  // being cut (help text, which must be read whole).
  void wrap_last() { wrap_ = true; }
  // Columns that may be left out, first to last, where the table would not fit `columns` (a
  // note under the table names them); the last column is never left out.
  void drop_when_narrow(std::vector<std::string> headers) { droppable_ = std::move(headers); }
  // Where the table would not fit `columns`, it is printed as several tables of consecutive
  // columns, each fitting (a row of counts whose headers are long).
  void split_when_narrow() { split_ = true; }
  // Columns padded to their widest cell, two spaces apart; no trailing blanks. With `columns`
  // (a terminal's width), a last column that would not fit is cut with "..." or wrapped (the
  // other columns are short; the last holds free text such as a family's summary).
  std::string render(const std::string& indent = "", int columns = terminal_columns()) const;
  // The width of the terminal standard output goes to; 0 when it is not a terminal.
  static int terminal_columns();

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  // Each column's width: its widest cell, the header's included.
  std::vector<size_t> widths() const;
  // The droppable columns, in order, to leave out for the table to fit `columns`; without them.
  std::vector<std::string> too_wide(const std::string& indent, int columns) const;
  Table without(const std::vector<std::string>& headers) const;

  // Consecutive columns [first, last) as a table of their own.
  Table columns_between(size_t first, size_t last) const;

  bool wrap_ = false, split_ = false;
  std::vector<std::string> droppable_;
};

// `text` with every line wider than `columns` (0: no limit) wrapped at spaces, each continuation
// under the line's own indentation and two more: prose a terminal would break mid-word. Lines that
// fit (tables, fitted to the width) are left as they are.
std::string fit_lines(const std::string& text, int columns);

// `text` in lines of at most `columns` columns, broken at spaces (a word longer than that on a
// line of its own).
std::vector<std::string> wrap_words(const std::string& text, size_t columns);

// `text` safe to print on a terminal: every control character but newline and tab (ESC, CR,
// backspace, DEL, the C1 controls such as U+009B, a CSI) and every byte that is not UTF-8 are
// written as visible escapes ("\x1b", "\u009b"), so that text from a file, another client or the
// user's own input can never move the cursor, recolour or retitle the terminal.
std::string visible_text(const std::string& text);

// Columns `text` takes on a terminal: its UTF-8 code points ("±" is two bytes, one column).
size_t display_width(const std::string& text);
// At most `columns` columns of `text`: itself when it fits, else its start and "...".
std::string fit_columns(const std::string& text, size_t columns);

// Summaries made of "; "-separated clauses, split into the clauses every one of them has (in the
// first's order) and, per summary, the clauses left: what tells the families apart. A summary with
// none left is "(only the shared clauses)". Fewer than two summaries: nothing shared. Where every
// summary's ops ("… kernel: matmul, sqrt, div, …") begin with the same three or more, `shared`
// says so ("ops begin: matmul, sqrt, div") and each row keeps its ops after them ("…div, matmul").
struct SharedClauses {
  std::string shared;
  std::vector<std::string> rest;
};
SharedClauses shared_clauses(const std::vector<std::string>& summaries);

// "f16[n, d]" from {dtype, shape: ["n", "d"]}; works for symbolic (strings) and concrete (ints).
std::string tensor_type(const nlohmann::json& tensor);
// "NAME: f16[n, d]"
std::string tensor_decl(const nlohmann::json& tensor);
// A number with up to 6 significant digits, as users read it.
std::string number(double value);
// A time given in ms, in the unit that fits it (docs/tuning.md, "The table"): "0.42 µs", "3.2 µs",
// "85.4 µs" below 0.1 ms, "0.385 ms" up to 10 ms, "64.0 ms" above; never "0.000 ms".
std::string duration_text(double ms);

// Renders one LSP diagnostic (0-based line, byte character) as
// "file:line:col: error: message", then the source line and a caret when `source` has that line.
// `line_offset` shifts the reported line (a block that starts at line 12 of a script).
std::string diagnostic_text(const std::string& file, const nlohmann::json& diagnostic, const std::string& source,
                            int line_offset = 0);

// "file:///a/b.prism" → "/a/b.prism", relative to the current directory when below it.
std::string display_path(const std::string& uri);

}  // namespace prism::repl
