#include "engine/io/npy.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "engine/error.h"
#include "engine/util/private_files.h"
#include "engine/interp/half.h"

namespace prism {

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw Error(Error::Kind::InvalidArgument, path + ": " + why);
}

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct Header {
  std::string descr;
  bool fortran_order = false;
  bool has_descr = false, has_order = false, has_shape = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  Header run() {
    Header h;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      std::string key = string();
      expect(':');
      if (key == "descr") {
        h.descr = string();
        h.has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        h.has_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        h.has_shape = true;
      } else {
        bad(path_, "unexpected key '" + key + "' in the .npy header");
      }
      skip();
      if (peek() == ',') ++i_;
      else if (peek() != '}') bad(path_, "malformed .npy header: expected ',' or '}'");
    }
    if (!h.has_descr || !h.has_order || !h.has_shape) bad(path_, "malformed .npy header: it needs descr, fortran_order and shape");
    return h;
  }

 private:
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t')) ++i_;
  }
  void expect(char c) {
    skip();
    if (peek() != c) bad(path_, std::string("malformed .npy header: expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    skip();
    char q = peek();
    if (q != '\'' && q != '"') bad(path_, "malformed .npy header: expected a quoted string");
    size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) bad(path_, "malformed .npy header: unterminated string");
    std::string out = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip();
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    bad(path_, "malformed .npy header: fortran_order must be True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> out;
    expect('(');
    while (true) {
      skip();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') bad(path_, "malformed .npy header: shape must be a tuple of integers");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) bad(path_, "shape entry too large in the .npy header");
        v = v * 10 + (s_[i_++] - '0');
      }
      if (peek() == 'L') ++i_;  // Python 2 longs
      out.push_back(v);
      skip();
      if (peek() == ',') ++i_;
      else if (peek() != ')') bad(path_, "malformed .npy header: expected ',' or ')' in shape");
    }
    ++i_;
    return out;
  }

  const std::string& s_;
  const std::string& path_;
  size_t i_ = 0;
};

uint32_t little_endian(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Tensor read_npy(const std::string& path, size_t max_bytes) {
  // A regular file only (a FIFO would block the worker, a device never end), and no larger than
  // the caller's budget: checked before anything is read.
  FileContents file = read_regular_file(path, max_bytes);
  if (!file.bytes) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw Error(Error::Kind::NotFound, path + ": cannot open (" + std::strerror(errno) + ")");
    throw Error(Error::Kind::InvalidArgument, file.error);
  }
  const std::string& bytes = *file.bytes;
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) bad(path, "not a .npy file (bad magic)");
  int major = u[6];
  if (major < 1 || major > 3) bad(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(u[7]));
  size_t len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_bytes) bad(path, "truncated .npy header");
  size_t header_len = little_endian(u + 8, int(len_bytes));
  size_t data_start = 8 + len_bytes + header_len;
  if (bytes.size() < data_start) bad(path, "truncated .npy header");
  Header h = HeaderParser(bytes.substr(8 + len_bytes, header_len), path).run();
  if (h.fortran_order) bad(path, "fortran_order: True is not supported; save the array in C order");

  int item = 0;
  if (h.descr == "<f4") item = 4;
  else if (h.descr == "<f2") item = 2;
  else if (h.descr == "<f8") item = 8;
  else if (h.descr.size() == 3 && h.descr[0] == '>' && h.descr[1] == 'f') bad(path, "big-endian data ('" + h.descr + "') is not supported");
  else bad(path, "unsupported dtype '" + h.descr + "' (expected '<f4', '<f2' or '<f8')");

  Tensor t;
  try {
    t = Tensor::zeros(item == 2 ? DType::F16 : DType::F32, h.shape);
  } catch (const Error& e) {
    bad(path, e.what());
  }
  size_t need = t.data.size() * size_t(item);
  if (bytes.size() - data_start < need)
    bad(path, "truncated data: shape " + shape_text(h.shape) + " needs " + std::to_string(need) + " bytes but the file has " +
                  std::to_string(bytes.size() - data_start));
  const char* src = bytes.data() + data_start;
  for (size_t i = 0; i < t.data.size(); ++i) {
    if (item == 4) {
      std::memcpy(&t.data[i], src + 4 * i, 4);
    } else if (item == 2) {
      uint16_t hbits;
      std::memcpy(&hbits, src + 2 * i, 2);
      t.data[i] = f16_bits_to_f32(hbits);
    } else {
      double d;
      std::memcpy(&d, src + 8 * i, 8);
      t.data[i] = float(d);
    }
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  bool half = t.dtype == DType::F16;
  std::string dict = std::string("{'descr': '") + (half ? "<f2" : "<f4") + "', 'fortran_order': False, 'shape': " + shape_text(t.shape) + ", }";
  // Pad with spaces and end with '\n' so the data starts at a multiple of 64 bytes.
  bool v2 = dict.size() + 1 + 10 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += char(v2 ? 2 : 1);
  out += char(0);
  size_t len = dict.size();
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += char((len >> (8 * i)) & 0xFF);
  out += dict;
  size_t start = out.size();
  out.resize(start + t.data.size() * (half ? 2 : 4));
  char* dst = out.data() + start;
  for (size_t i = 0; i < t.data.size(); ++i) {
    if (half) {
      uint16_t bits = f32_to_f16_bits(t.data[i]);
      std::memcpy(dst + 2 * i, &bits, 2);
    } else {
      std::memcpy(dst + 4 * i, &t.data[i], 4);
    }
  }
  // A new file renamed into place: never written through a symlink, never left half written.
  if (std::string problem = write_file_atomically(path, out); !problem.empty()) throw Error(Error::Kind::Failed, problem);
}

}  // namespace prism
