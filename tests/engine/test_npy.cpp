#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/error.h"
#include "engine/interp/half.h"
#include "engine/io/npy.h"

using namespace prism;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("prism_npy_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// A hand-built .npy file with the given header dict and version.
std::string npy_bytes(const std::string& dict, int major, const std::string& data) {
  std::string header = dict + "\n";
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  size_t len = header.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += char((len >> (8 * i)) & 0xFF);
  return out + header + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s;
  for (float f : v) s.append(reinterpret_cast<const char*>(&f), 4);
  return s;
}

// A Python that can import numpy: python3 on PATH, else the system one (PATH may hold a
// pyenv or venv python without numpy while the Debian package is installed).
std::string numpy_python() {
  for (const char* py : {"python3", "/usr/bin/python3"})
    if (std::system((std::string(py) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) return py;
  return "";
}

}  // namespace

TEST_CASE("npy round trip for f32, f16 and bf16", "[engine][npy]") {
  fs::path dir = temp_dir();
  Tensor t;
  t.dtype = DType::F32;
  t.shape = {2, 3};
  t.data = {1, -2, 3.5f, 1e-8f, 65504, 0.1f};
  write_npy((dir / "a.npy").string(), t);
  Tensor r = read_npy((dir / "a.npy").string());
  CHECK(r.dtype == DType::F32);
  CHECK(r.shape == t.shape);
  CHECK(r.data == t.data);
  CHECK(fs::file_size(dir / "a.npy") % 64 == 24 % 64);  // 64-byte aligned header + 24 data bytes

  Tensor h = t;
  h.dtype = DType::F16;
  round_all(DType::F16, h.data.data(), h.data.size());
  write_npy((dir / "h.npy").string(), h);
  Tensor rh = read_npy((dir / "h.npy").string());
  CHECK(rh.dtype == DType::F16);
  CHECK(rh.data == h.data);

  Tensor s;
  s.dtype = DType::BF16;
  s.shape = {};
  s.data = {1.5f};
  write_npy((dir / "s.npy").string(), s);
  Tensor rs = read_npy((dir / "s.npy").string());
  CHECK(rs.dtype == DType::F32);
  CHECK(rs.shape.empty());
  CHECK(rs.data == std::vector<float>{1.5f});
  fs::remove_all(dir);
}

TEST_CASE("npy reads header versions 1, 2 and 3 and f8", "[engine][npy]") {
  fs::path dir = temp_dir();
  for (int major : {1, 2, 3}) {
    write_bytes(dir / "v.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", major, floats({1, 2, 3})));
    Tensor t = read_npy((dir / "v.npy").string());
    CHECK(t.shape == std::vector<int64_t>{3});
    CHECK(t.data == std::vector<float>{1, 2, 3});
  }
  double d[2] = {0.1, -2.5};
  write_bytes(dir / "d.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", 1, std::string(reinterpret_cast<char*>(d), 16)));
  CHECK(read_npy((dir / "d.npy").string()).data == std::vector<float>{0.1f, -2.5f});
  fs::remove_all(dir);
}

TEST_CASE("npy errors name the path and the problem", "[engine][npy]") {
  fs::path dir = temp_dir();
  auto error_of = [&](const std::string& bytes) -> std::string {
    write_bytes(dir / "bad.npy", bytes);
    try {
      read_npy((dir / "bad.npy").string());
    } catch (const Error& e) {
      CHECK(e.kind() == Error::Kind::InvalidArgument);
      return e.what();
    }
    return "no error";
  };
  std::string p = (dir / "bad.npy").string();
  CHECK(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 1, floats({1, 2, 3, 4}))) ==
        p + ": fortran_order: True is not supported; save the array in C order");
  CHECK(error_of(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", 1, floats({1}))) ==
        p + ": unsupported dtype '<i4' (expected '<f4', '<f2' or '<f8')");
  CHECK(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 1, floats({1}))) ==
        p + ": truncated data: shape (4,) needs 16 bytes but the file has 4");
  CHECK(error_of("hello world") == p + ": not a .npy file (bad magic)");
  CHECK(error_of(npy_bytes("{'descr': '<f4', 'shape': (1,), }", 1, floats({1}))) ==
        p + ": malformed .npy header: it needs descr, fortran_order and shape");
  CHECK(error_of(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 1, floats({1}))) ==
        p + ": big-endian data ('>f4') is not supported");
  try {
    read_npy((dir / "missing.npy").string());
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::NotFound);
    CHECK(std::string(e.what()).find((dir / "missing.npy").string() + ": cannot open") == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("npy files agree with numpy", "[engine][npy]") {
  const std::string py = numpy_python();
  if (py.empty()) {
    WARN("numpy is not importable by python3; skipping the numpy cross-check");
    return;
  }
  fs::path dir = temp_dir();
  std::string cmd = py + " -c \"import numpy as np; "
                    "np.save('" + (dir / "np16.npy").string() + "', np.arange(6, dtype=np.float16).reshape(2, 3) / 3); "
                    "np.save('" + (dir / "np32.npy").string() + "', np.array([[1.5, -2.25]], dtype=np.float32))\"";
  REQUIRE(std::system(cmd.c_str()) == 0);
  Tensor h = read_npy((dir / "np16.npy").string());
  CHECK(h.dtype == DType::F16);
  CHECK(h.shape == std::vector<int64_t>{2, 3});
  CHECK(h.data[1] == f16_bits_to_f32(f32_to_f16_bits(1.0f / 3)));
  Tensor f = read_npy((dir / "np32.npy").string());
  CHECK(f.data == std::vector<float>{1.5f, -2.25f});

  Tensor ours;
  ours.dtype = DType::F16;
  ours.shape = {2, 2};
  ours.data = {0.5f, -1, 2048, 3};
  write_npy((dir / "ours.npy").string(), ours);
  std::string check = py + " -c \"import numpy as np; a = np.load('" + (dir / "ours.npy").string() +
                      "'); assert a.dtype == np.float16 and a.shape == (2, 2) and a.tolist() == [[0.5, -1.0], [2048.0, 3.0]], a\"";
  CHECK(std::system(check.c_str()) == 0);
  fs::remove_all(dir);
}
