// Memory for a kernel's inputs and outputs as the runner hands them (and the kernel benchmark):
// 64-byte aligned, as a vectorized kernel likes it; from 4 MiB up, 2 MiB aligned and asked to be
// backed by huge pages (where transparent huge pages are on "madvise"), so that a kernel streaming a
// large weight matrix is not limited by 4 KiB page walks. (2-core Sapphire Rapids, a bf16 8 x 4096
// @ 4096 x 4096 layer, whose strips step 8 KiB down B's rows: 0.80 ms in 4 KiB pages, 0.65 in 2 MiB.)
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace prism::backend::cpu {

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

}  // namespace prism::backend::cpu
