// Private state (issue 17, D4, D6, D8, D13, D15): private directories, files written whole and
// never through a symlink, reads of regular files only, stale temp files, sealed cache entries.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "engine/util/cache.h"
#include "engine/util/private_dir.h"
#include "engine/util/private_files.h"
#include "engine/util/sealed_file.h"
#include "engine/util/sha256.h"
#include "support/scoped_env.h"
#include "support/subprocess.h"

using namespace prism;
namespace fs = std::filesystem;

namespace {

unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary | std::ios::trunc) << text; }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A process id that no process has any more.
pid_t dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

}  // namespace

TEST_CASE("sha256 matches the FIPS 180-4 examples", "[util][sha256]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("ensure_private_dir creates 0700, tightens ours, refuses what others could write", "[util][private]") {
  test::TempDir root;
  const mode_t old_umask = ::umask(0);  // the weakest umask: what we create must still be private
  std::string created = root / "a/b/c";
  CHECK(ensure_private_dir(created).empty());
  CHECK(mode_of(created) == 0700);
  CHECK(mode_of(root / "a/b") == 0700);

  std::string readable = root / "readable";
  ::mkdir(readable.c_str(), 0755);
  CHECK(ensure_private_dir(readable).empty());
  CHECK(mode_of(readable) == 0700);

  std::string open = root / "open";
  ::mkdir(open.c_str(), 0777);
  ::chmod(open.c_str(), 0777);
  CHECK_THAT(ensure_private_dir(open), Catch::Contains("writable by other users"));
  CHECK(mode_of(open) == 0777);  // left as it is: what is inside cannot be trusted

  write_text(root / "file", "x");
  CHECK_THAT(ensure_private_dir(root / "file"), Catch::Contains("not a directory"));

  if (::geteuid() == 0) {
    // Another user's directory (here: made by root for uid 65534) is refused, 0700 or not.
    std::string theirs = root / "theirs";
    ::mkdir(theirs.c_str(), 0700);
    REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
    CHECK_THAT(ensure_private_dir(theirs), Catch::Contains("belongs to another user"));
  }
  ::umask(old_umask);
}

TEST_CASE("write_file_atomically writes 0600 files and replaces a symlink instead of following it", "[util][private]") {
  test::TempDir root;
  const mode_t old_umask = ::umask(0);
  std::string file = root / "state.json";
  CHECK(write_file_atomically(file, "one").empty());
  CHECK(read_text(file) == "one");
  CHECK(mode_of(file) == 0600);
  CHECK(write_file_atomically(file, "two").empty());
  CHECK(read_text(file) == "two");

  std::string victim = root / "victim";
  write_text(victim, "keep me");
  std::string link = root / "out.npy";
  REQUIRE(::symlink(victim.c_str(), link.c_str()) == 0);
  CHECK(write_file_atomically(link, "payload").empty());
  CHECK(read_text(victim) == "keep me");
  CHECK_FALSE(fs::is_symlink(link));
  CHECK(read_text(link) == "payload");

  CHECK_FALSE(write_file_atomically(root / "no/such/dir/file", "x").empty());
  size_t left = 0;
  for (const auto& e : fs::directory_iterator(root.path())) left += e.path().string().find(".tmp.") != std::string::npos;
  CHECK(left == 0);
  ::umask(old_umask);
}

TEST_CASE("write_file_atomically refuses a FIFO, a socket or a device and leaves it as it was", "[util][private][security]") {
  // Issue 46, 5: `program/run`'s output replaced a node made as `mknod n c 1 3` with a 0600 file;
  // as root, `--out /dev/null` would have replaced it for the whole machine.
  test::TempDir root;
  const std::string fifo = root / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(write_file_atomically(fifo, "payload"), Catch::Contains("refusing to replace") && Catch::Contains("(a FIFO)"));
  CHECK(fs::is_fifo(fifo));

  const std::string sock = root / "sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  CHECK_THAT(write_file_atomically(sock, "payload"), Catch::Contains("(a socket)"));
  CHECK(fs::is_socket(sock));
  ::close(fd);

  CHECK_THAT(write_file_atomically(root.path(), "payload"), Catch::Contains("(a directory)"));
  CHECK(fs::is_directory(root.path()));
  // The device of the issue: only root may make one.
  if (::geteuid() == 0) {
    const std::string null = root / "n";
    REQUIRE(::mknod(null.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0);
    CHECK_THAT(write_file_atomically(null, "payload"), Catch::Contains("(a device)"));
    CHECK(fs::is_character_file(null));
  }
  size_t left = 0;
  for (const auto& e : fs::directory_iterator(root.path())) left += e.path().string().find(".tmp.") != std::string::npos;
  CHECK(left == 0);
}

TEST_CASE("read_regular_file refuses FIFOs, devices, directories and large files without blocking", "[util][private]") {
  test::TempDir root;
  std::string fifo = root / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto start = std::chrono::steady_clock::now();
  FileContents r = read_regular_file(fifo, 1 << 20);
  CHECK_FALSE(r.bytes);
  CHECK_THAT(r.error, Catch::Contains("FIFO"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));

  r = read_regular_file("/dev/zero", 1 << 20);
  CHECK_FALSE(r.bytes);
  CHECK_THAT(r.error, Catch::Contains("device"));
  CHECK_THAT(read_regular_file(root.path(), 1 << 20).error, Catch::Contains("directory"));

  write_text(root / "big", std::string(5000, 'x'));
  CHECK_THAT(read_regular_file(root / "big", 4096).error, Catch::Contains("more than the limit"));
  r = read_regular_file(root / "big", 5000);
  REQUIRE(r.bytes);
  CHECK(r.bytes->size() == 5000);
  CHECK_THAT(read_regular_file(root / "missing", 10).error, Catch::Contains("No such file"));
}

TEST_CASE("remove_stale_temp_files removes what dead writers left and keeps live ones", "[util][private]") {
  test::TempDir root;
  std::string dead = root / ("kernel.tmp." + std::to_string(dead_pid()) + ".3.so");
  std::string live = root / ("kernel.tmp." + std::to_string(::getpid()) + ".4.so");
  write_text(dead, "half");
  write_text(live, "busy");
  write_text(root / "kernel.so", "whole");
  CHECK(remove_stale_temp_files(root.path()) == 1);
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(live));
  CHECK(fs::exists(root / "kernel.so"));
  // A pid reused since (pids wrap at 32768 on many systems): a live process that started after
  // the file was written is not its writer. This process's pid, on a file from a day ago.
  std::string reused = root / ("kernel.tmp." + std::to_string(::getpid()) + ".5.so");
  write_text(reused, "old");
  const auto day_ago = fs::file_time_type::clock::now() - std::chrono::hours(24);
  fs::last_write_time(reused, day_ago);
  CHECK(remove_stale_temp_files(root.path()) == 1);
  CHECK_FALSE(fs::exists(reused));
  CHECK(fs::exists(live));
  // A writer that exited but is not reaped yet (a zombie: the kernel runner of a daemon killed
  // with -9, where init collects orphans late) writes nothing more.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  std::string zombie = root / ("kernel.so.tmp." + std::to_string(child) + ".2.so.tmp." + std::to_string(child) + ".3");
  write_text(zombie, "half");
  for (int i = 0; i < 200; ++i) {  // until it has exited (it stays a zombie: nobody waits yet)
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    if (text.find(") Z ") != std::string::npos) break;
    ::usleep(10000);
  }
  CHECK(remove_stale_temp_files(root.path()) == 1);
  CHECK_FALSE(fs::exists(zombie));
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("a sealed file is read only while it matches its checksum", "[util][sealed]") {
  test::TempDir root;
  std::string path = root / "k.so";
  CHECK_THAT(read_sealed_file(path, 1 << 20).error, Catch::Contains("No such file"));
  write_text(path, "library bytes");
  CHECK_THAT(read_sealed_file(path, 1 << 20).error, Catch::Contains("no checksum"));
  REQUIRE(write_seal(path, "library bytes").empty());
  FileContents ok = read_sealed_file(path, 1 << 20);
  REQUIRE(ok.bytes);
  CHECK(*ok.bytes == "library bytes");
  ::truncate(path.c_str(), 7);
  CHECK_THAT(read_sealed_file(path, 1 << 20).error, Catch::Contains("does not match its checksum"));
  remove_sealed_file(path);
  CHECK_FALSE(fs::exists(path));
  CHECK_FALSE(fs::exists(path + ".sha256"));
}

TEST_CASE("the kernel cache never falls back to /tmp when HOME is unset", "[util][private]") {
  // D4: with HOME and XDG_CACHE_HOME unset the cache was /tmp/.cache/prism, which another user
  // can create first. Now it is the passwd entry's home.
  std::map<std::string, std::string> saved;
  for (const char* name : {"HOME", "XDG_CACHE_HOME", "PRISM_CACHE_DIR"})
    if (const char* v = std::getenv(name)) saved[name] = v;
  for (const char* name : {"HOME", "XDG_CACHE_HOME", "PRISM_CACHE_DIR"}) ::unsetenv(name);
  std::string dir = prism_cache_dir("kernels");
  std::string home = home_dir();
  for (const auto& [k, v] : saved) ::setenv(k.c_str(), v.c_str(), 1);
  CHECK_FALSE(home.empty());
  CHECK(dir == home + "/.cache/prism/kernels");
  CHECK(dir.rfind("/tmp", 0) != 0);
}

TEST_CASE("a PrivateDir checks every directory from its root down, on the descriptors it holds", "[util][private][security]") {
  // Issue 46, 1: only the last directory of the kernel cache was checked. Now every one from the
  // root down is, and what is read afterwards comes through the checked descriptor.
  test::TempDir root;
  const mode_t old_umask = ::umask(0);
  PrivateDir made = PrivateDir::open(root / "prism", "kernels/x", /*create=*/true);
  REQUIRE(made.ok());
  CHECK(made.path() == root / "prism/kernels/x");
  CHECK(mode_of(root / "prism") == 0700);
  CHECK(mode_of(root / "prism/kernels/x") == 0700);
  ::umask(old_umask);
  REQUIRE(made.write("f", "ours").empty());
  CHECK(mode_of(root / "prism/kernels/x/f") == 0600);

  // A directory in the middle that others may write: refused by name, whatever lies below it.
  ::chmod((root / "prism/kernels").c_str(), 0777);
  PrivateDir open_middle = PrivateDir::open(root / "prism", "kernels/x");
  CHECK_FALSE(open_middle.ok());
  CHECK_THAT(open_middle.error(), Catch::Contains(root / "prism/kernels is writable by other users"));
  ::chmod((root / "prism/kernels").c_str(), 0700);
  ::chmod((root / "prism").c_str(), 0777);
  CHECK_THAT(PrivateDir::open(root / "prism", "kernels/x").error(), Catch::Contains(root / "prism is writable by other users"));
  ::chmod((root / "prism").c_str(), 0700);
  CHECK_THAT(PrivateDir::open(root / "missing", "kernels").error(), Catch::Contains("No such file"));
  CHECK_FALSE(fs::exists(root / "missing"));  // nothing created without `create`

  // Whoever owns a parent of the root may swap the tree under a path: once open, the directory
  // read is the one checked, not what the path names now.
  PrivateDir held = PrivateDir::open(root / "prism", "kernels/x");
  REQUIRE(held.ok());
  fs::rename(root / "prism", root / "moved");
  fs::create_directories(root / "prism/kernels/x");
  write_text(root / "prism/kernels/x/f", "planted");
  FileContents read = held.read("f", 100);
  REQUIRE(read.bytes);
  CHECK(*read.bytes == "ours");
  CHECK(read_text(held.fd_path("f")) == "ours");

  // A file of the directory that others may write is not read.
  ::chmod((root / "moved/kernels/x/f").c_str(), 0666);
  CHECK_THAT(held.read("f", 100).error, Catch::Contains("writable by other users"));
  if (::geteuid() == 0) {
    ::chmod((root / "moved/kernels/x/f").c_str(), 0600);
    REQUIRE(::chown((root / "moved/kernels/x/f").c_str(), 65534, 65534) == 0);
    CHECK_THAT(held.read("f", 100).error, Catch::Contains("belongs to another user"));
    // Another user's directory anywhere on the way.
    REQUIRE(::chown((root / "moved/kernels").c_str(), 65534, 65534) == 0);
    CHECK_THAT(PrivateDir::open(root / "moved", "kernels/x").error(), Catch::Contains("belongs to another user (uid 65534)"));
  } else {
    WARN("skipped the other user's file and directory: needs root to chown");
  }
}

TEST_CASE("a cache directory is checked from prism's cache root", "[util][private][security]") {
  test::ScopedEnv cache("PRISM_CACHE_DIR", "/c/prism");
  CHECK(prism_cache_root() == "/c/prism");
  CHECK(prism_cache_dir("kernels") == "/c/prism/kernels");
  CHECK(cache_root_and_sub("/c/prism/kernels") == std::pair<std::string, std::string>{"/c/prism", "kernels"});
  CHECK(cache_root_and_sub("/c/prismx/kernels") == std::pair<std::string, std::string>{"/c/prismx/kernels", ""});
  CHECK(cache_root_and_sub("/elsewhere") == std::pair<std::string, std::string>{"/elsewhere", ""});
}
