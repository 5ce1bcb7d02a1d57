// Sizes and strides: int64 vectors stored inline up to kInline dims.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace tp {

/// A vector of int64 with inline storage for up to 5 elements.
class DimVector {
 public:
  static constexpr int kInline = 5;
  DimVector() = default;
  explicit DimVector(size_t n, int64_t v = 0) { resize(n, v); }
  DimVector(std::initializer_list<int64_t> il) { assign(il.begin(), il.size()); }
  DimVector(const int64_t* p, size_t n) { assign(p, n); }
  DimVector(const DimVector& o) { assign(o.data(), o.size()); }
  DimVector(DimVector&& o) noexcept { move_from(o); }
  DimVector& operator=(const DimVector& o) { if (this != &o) assign(o.data(), o.size()); return *this; }
  DimVector& operator=(DimVector&& o) noexcept { if (this != &o) { free_heap(); move_from(o); } return *this; }
  ~DimVector() { free_heap(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_ ? heap_ : inline_; }
  const int64_t* data() const { return heap_ ? heap_ : inline_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t back() const { return data()[size_ - 1]; }

  void resize(size_t n, int64_t v = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = v;
    size_ = n;
  }
  void push_back(int64_t v) { reserve(size_ + 1); data()[size_++] = v; }
  void insert(size_t pos, int64_t v) {
    reserve(size_ + 1);
    int64_t* d = data();
    std::memmove(d + pos + 1, d + pos, (size_ - pos) * sizeof(int64_t));
    d[pos] = v;
    ++size_;
  }
  void erase(size_t pos) {
    int64_t* d = data();
    std::memmove(d + pos, d + pos + 1, (size_ - pos - 1) * sizeof(int64_t));
    --size_;
  }
  void assign(const int64_t* p, size_t n) {
    reserve(n);
    if (n) std::memmove(data(), p, n * sizeof(int64_t));  // p may be null when n is 0
    size_ = n;
  }
  bool operator==(const DimVector& o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }
  bool operator!=(const DimVector& o) const { return !(*this == o); }

 private:
  void reserve(size_t n) {
    if (n <= cap()) return;
    size_t c = std::max<size_t>(n, 2 * cap());
    auto* p = static_cast<int64_t*>(std::malloc(c * sizeof(int64_t)));
    std::memcpy(p, data(), size_ * sizeof(int64_t));
    free_heap();
    heap_ = p;
    heap_cap_ = c;
  }
  size_t cap() const { return heap_ ? heap_cap_ : kInline; }
  void free_heap() { if (heap_) { std::free(heap_); heap_ = nullptr; } }
  void move_from(DimVector& o) {
    size_ = o.size_;
    if (o.heap_) { heap_ = o.heap_; heap_cap_ = o.heap_cap_; o.heap_ = nullptr; }
    else std::memcpy(inline_, o.inline_, size_ * sizeof(int64_t));
    o.size_ = 0;
  }

  int64_t inline_[kInline];
  int64_t* heap_ = nullptr;
  size_t heap_cap_ = 0;
  size_t size_ = 0;
};

}  // namespace tp
