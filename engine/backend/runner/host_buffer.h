// Memory for a kernel's inputs and outputs as the runner hands them (and the kernel benchmark):
// 64-byte aligned, as a vectorized kernel likes it; from 4 MiB up, 2 MiB aligned and asked to be
// backed by huge pages (where transparent huge pages are on "madvise"), so that a kernel streaming a
// large weight matrix is not limited by 4 KiB page walks (docs/tuning.md, "The CPU's other kernel
// choices").
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace prism::backend {

class HostBuffer {
 public:
  // Throws std::bad_alloc.
  explicit HostBuffer(size_t bytes) {
    constexpr size_t kHuge = size_t(2) << 20;
    size_t size = (bytes + 63) / 64 * 64 + 64;  // and a line past the end, as vector tails may read
    const size_t align = size >= 2 * kHuge ? kHuge : 64;
    size = (size + align - 1) / align * align;
    data_ = std::aligned_alloc(align, size);
    if (!data_) throw std::bad_alloc();
    if (align == kHuge) ::madvise(data_, size, MADV_HUGEPAGE);
  }
  ~HostBuffer() { std::free(data_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};

}  // namespace prism::backend
