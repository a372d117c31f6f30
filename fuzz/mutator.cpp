// Byte and text mutations (mutator.h). JSON: json_mutations.cpp; framing: frame_mutations.cpp.
#include "fuzz/mutator.h"

#include <algorithm>
#include <cctype>

namespace prism::fuzz {

namespace {

const std::vector<std::string> kInterestingBytes = {std::string(1, '\0'),
                                                    "\xff",
                                                    "\x80",
                                                    "\xc0\x80",
                                                    "\xed\xa0\x80",
                                                    "\xf4\x90\x80\x80",
                                                    "\r",
                                                    "\n",
                                                    "\r\n",
                                                    "\t",
                                                    "\"",
                                                    "\\",
                                                    "{",
                                                    "}",
                                                    "[",
                                                    "]",
                                                    ":",
                                                    ",",
                                                    "\xe2\x80\x94",
                                                    "\xf0\x9f\x98\x80"};

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

Mutator Mutator::for_iteration(uint64_t seed, uint64_t i) { return Mutator(splitmix64(seed ^ splitmix64(i))); }

std::string Mutator::mutate_bytes(std::string s, const std::vector<std::string>& corpus, int max_edits) {
  int edits = 1 + int(below(size_t(std::max(1, max_edits))));
  for (int e = 0; e < edits; ++e) {
    size_t pos = below(s.size() + 1);
    switch (below(8)) {
      case 0:  // flip bits of one byte
        if (pos < s.size()) s[pos] = char(s[pos] ^ (1 << below(8)));
        break;
      case 1:  // a random byte
        if (pos < s.size()) s[pos] = char(next() & 0xFF);
        break;
      case 2:  // delete a run
        if (pos < s.size()) s.erase(pos, 1 + below(std::min<size_t>(64, s.size() - pos)));
        break;
      case 3:  // insert random bytes
        for (size_t i = 1 + below(8); i > 0; --i) s.insert(s.begin() + long(pos), char(next() & 0xFF));
        break;
      case 4:  // insert an interesting byte sequence
        s.insert(pos, pick(kInterestingBytes));
        break;
      case 5:  // duplicate a slice
        if (pos < s.size()) s.insert(pos, s.substr(pos, 1 + below(64)));
        break;
      case 6:  // truncate (rarely: most edits should leave something to parse)
        if (chance(0.3)) s.resize(pos);
        break;
      case 7:  // splice: our prefix, another entry's suffix
        if (!corpus.empty()) {
          const std::string& other = pick(corpus);
          s = s.substr(0, pos) + other.substr(below(other.size() + 1));
        }
        break;
    }
  }
  return s;
}

std::string Mutator::mutate_text(std::string text, const std::vector<std::string>& corpus, const std::vector<std::string>& tokens) {
  int edits = chance(0.6) ? 1 : 2 + int(below(3));
  for (int e = 0; e < edits; ++e) {
    size_t pos = below(text.size() + 1);
    switch (below(7)) {
      case 0: text = mutate_bytes(std::move(text), corpus, 3); break;
      case 1:  // insert a token
        text.insert(pos, pick(tokens));
        break;
      case 2: {  // replace the identifier or number at pos by a token
        size_t b = pos, end = pos;
        while (b > 0 && is_ident(text[b - 1])) --b;
        while (end < text.size() && is_ident(text[end])) ++end;
        text.replace(b, end - b, pick(tokens));
        break;
      }
      case 3: {  // duplicate, drop or swap lines
        std::vector<std::string> lines;
        size_t start = 0;
        for (size_t i = 0; i <= text.size(); ++i)
          if (i == text.size() || text[i] == '\n') lines.push_back(text.substr(start, i - start)), start = i + 1;
        size_t a = below(lines.size()), b = below(lines.size());
        switch (below(3)) {
          case 0: lines.insert(lines.begin() + long(a), lines[b]); break;
          case 1: lines.erase(lines.begin() + long(a)); break;
          case 2: std::swap(lines[a], lines[b]); break;
        }
        text.clear();
        for (size_t i = 0; i < lines.size(); ++i) text += (i ? "\n" : "") + lines[i];
        break;
      }
      case 4:  // a number becomes an extreme one
        for (size_t i = pos; i < text.size(); ++i) {
          if (!std::isdigit(static_cast<unsigned char>(text[i]))) continue;
          size_t end = i;
          while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
          text.replace(i, end - i, extreme_number());
          break;
        }
        break;
      case 5:  // splice a line range of another program in
        if (!corpus.empty()) {
          const std::string& other = pick(corpus);
          size_t from = below(other.size() + 1);
          text.insert(pos, other.substr(from, below(other.size() - from + 1)));
        }
        break;
      case 6: {  // nest: wrap the expression at pos in many parentheses or unary ops
        size_t depth = chance(0.8) ? 1 + below(40) : 1 + below(20000);
        std::string open = chance(0.5) ? "(" : (chance(0.5) ? "-" : "exp(");
        std::string close = open == "-" ? "" : ")";
        std::string opens, closes;
        for (size_t i = 0; i < depth; ++i) opens += open, closes += close;
        size_t end = pos;
        while (end < text.size() && is_ident(text[end])) ++end;
        text.insert(end, closes);
        text.insert(pos, opens);
        break;
      }
    }
  }
  return text;
}

}  // namespace prism::fuzz
