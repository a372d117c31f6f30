#include "engine/util/sealed_file.h"

#include <unistd.h>

#include "engine/util/sha256.h"

namespace prism {

namespace {

std::string seal_of(const std::string& path) { return path + ".sha256"; }

FileContents matched(const std::string& path, FileContents file, const FileContents& seal) {
  FileContents out;
  if (!file.bytes) out.error = file.error;
  else if (!seal.bytes) out.error = path + " has no checksum (" + seal.error + ")";
  else if (seal.bytes->substr(0, 64) != sha256_hex(*file.bytes))
    out.error = path + " does not match its checksum: it was truncated or changed after prism wrote it";
  else out.bytes = std::move(file.bytes);
  return out;
}

}  // namespace

std::string write_seal(const std::string& path, std::string_view bytes) {
  return write_file_atomically(seal_of(path), sha256_hex(bytes) + "\n");
}

std::string write_seal(const PrivateDir& dir, const std::string& name, std::string_view bytes) {
  return dir.write(seal_of(name), sha256_hex(bytes) + "\n");
}

FileContents read_sealed_file(const std::string& path, size_t max_bytes) {
  FileContents file = read_regular_file(path, max_bytes);
  if (!file.bytes) return file;
  return matched(path, std::move(file), read_regular_file(seal_of(path), 256));
}

FileContents read_sealed_file(const PrivateDir& dir, const std::string& name, size_t max_bytes) {
  FileContents file = dir.read(name, max_bytes);
  if (!file.bytes) return file;
  return matched(dir.path() + "/" + name, std::move(file), dir.read(seal_of(name), 256));
}

void remove_sealed_file(const std::string& path) {
  ::unlink(path.c_str());
  ::unlink(seal_of(path).c_str());
}

void remove_sealed_file(const PrivateDir& dir, const std::string& name) {
  dir.remove(name);
  dir.remove(seal_of(name));
}

}  // namespace prism
