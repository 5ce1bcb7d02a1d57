// tensorplay._C_distributed: a process group over Gloo (Debian's libgloo) and its TCP
// transport. Note [Distributed engine] in docs/architecture.md says why Gloo.
//
// The module works on raw host buffers (address, element count, dtype code); the Python
// layer (tensorplay/distributed) turns tensors into contiguous buffers and keeps them alive
// until the Work that uses them is finished. Collectives run in submission order on one
// worker thread per group, so every rank issues them to Gloo in the same order; send and
// recv are posted at once on Gloo's unbound buffers and waited for by their Work.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/shared_ptr.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/config.h>
#include <gloo/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace nb = nanobind;
using ms = std::chrono::milliseconds;

namespace tp_dist {

// ---- the rendezvous store: Gloo asks a Python store (TCPStore/FileStore) for keys ----
// Gloo calls it from connectFullMesh, which runs with the GIL released.
class PyStore : public gloo::rendezvous::Store {
 public:
  PyStore(nb::object store, std::string prefix) : store_(std::move(store)), prefix_(std::move(prefix)) {}
  ~PyStore() override {
    nb::gil_scoped_acquire g;
    store_.reset();
  }
  void set(const std::string& key, const std::vector<char>& data) override {
    nb::gil_scoped_acquire g;
    store_.attr("set")(prefix_ + key, nb::bytes(data.data(), data.size()));
  }
  std::vector<char> get(const std::string& key) override {
    nb::gil_scoped_acquire g;
    nb::bytes b = nb::cast<nb::bytes>(store_.attr("get")(prefix_ + key));
    const char* p = b.c_str();
    return std::vector<char>(p, p + b.size());
  }
  void wait(const std::vector<std::string>& keys) override {
    nb::gil_scoped_acquire g;
    nb::list l;
    for (auto& k : keys) l.append(nb::str((prefix_ + k).c_str()));
    store_.attr("wait")(l);
  }
  void wait(const std::vector<std::string>& keys, const ms&) override { wait(keys); }

 private:
  nb::object store_;
  std::string prefix_;
};

// ---- dtypes (codes shared with tensorplay/distributed/distributed_c10d.py) ----
enum DType : int { F32 = 0, F64, F16, BF16, I8, U8, I16, I32, I64, BOOL };
enum Op : int { SUM = 0, PRODUCT = 1, MIN = 2, MAX = 3, BAND = 4, BOR = 5, BXOR = 6 };

size_t itemsize(int dt) {
  switch (dt) {
    case F32: case I32: return 4;
    case F64: case I64: return 8;
    case F16: case BF16: case I16: return 2;
    case I8: case U8: case BOOL: return 1;
  }
  throw std::invalid_argument("unsupported dtype code");
}

struct Half16 { uint16_t bits; };
struct BFloat16 { uint16_t bits; };

inline float to_float(Half16 h) {
  uint32_t s = (h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1f, m = h.bits & 0x3ff, f;
  if (e == 0) {
    if (m == 0) f = s;
    else {  // subnormal: normalise
      e = 113;
      while (!(m & 0x400)) { m <<= 1; --e; }
      f = s | (e << 23) | ((m & 0x3ff) << 13);
    }
  } else if (e == 31) f = s | 0x7f800000u | (m << 13);
  else f = s | ((e + 112) << 23) | (m << 13);
  float out; std::memcpy(&out, &f, 4); return out;
}
inline Half16 from_float_h(float x) {  // round to nearest even
  uint32_t f; std::memcpy(&f, &x, 4);
  uint32_t s = (f >> 16) & 0x8000u;
  uint32_t a = f & 0x7fffffffu;
  if (a > 0x7f800000u) return {uint16_t(s | 0x7e00u)};
  if (a >= 0x477ff000u) return {uint16_t(s | 0x7c00u)};  // overflow to inf
  if (a < 0x38800000u) {  // subnormal or zero
    float ax; std::memcpy(&ax, &a, 4);
    float scaled = ax * 16777216.0f;  // 2^24: units of the smallest subnormal
    uint32_t q = uint32_t(std::nearbyint(scaled));
    return {uint16_t(s | q)};
  }
  uint32_t e = ((a >> 23) - 112) << 10, m = a & 0x7fffffu;
  uint32_t h = e | (m >> 13);
  uint32_t rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;
  return {uint16_t(s | h)};
}
inline float to_float(BFloat16 b) {
  uint32_t f = uint32_t(b.bits) << 16; float out; std::memcpy(&out, &f, 4); return out;
}
inline BFloat16 from_float_b(float x) {
  uint32_t f; std::memcpy(&f, &x, 4);
  if ((f & 0x7fffffffu) > 0x7f800000u) return {uint16_t((f >> 16) | 0x40)};
  f += 0x7fffu + ((f >> 16) & 1);
  return {uint16_t(f >> 16)};
}

template <typename T> struct Arith {  // plain arithmetic types
  static T sum(T a, T b) { return a + b; }
  static T prod(T a, T b) { return a * b; }
  static T mn(T a, T b) { return b < a ? b : a; }
  static T mx(T a, T b) { return a < b ? b : a; }
};

template <typename T, typename F>
void elementwise(void* out, const void* a, const void* b, size_t n, F f) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
}

template <typename T>
gloo::AllreduceOptions::Func arith_fn(int op) {
  switch (op) {
    case SUM: return [](void* o, const void* a, const void* b, size_t n) { elementwise<T>(o, a, b, n, [](T x, T y) { return T(x + y); }); };
    case PRODUCT: return [](void* o, const void* a, const void* b, size_t n) { elementwise<T>(o, a, b, n, [](T x, T y) { return T(x * y); }); };
    case MIN: return [](void* o, const void* a, const void* b, size_t n) {
      elementwise<T>(o, a, b, n, [](T x, T y) { if constexpr (std::is_floating_point_v<T>) { if (x != x) return x; if (y != y) return y; } return y < x ? y : x; }); };
    case MAX: return [](void* o, const void* a, const void* b, size_t n) {
      elementwise<T>(o, a, b, n, [](T x, T y) { if constexpr (std::is_floating_point_v<T>) { if (x != x) return x; if (y != y) return y; } return x < y ? y : x; }); };
  }
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case BAND: return [](void* o, const void* a, const void* b, size_t n) { elementwise<T>(o, a, b, n, [](T x, T y) { return T(x & y); }); };
      case BOR: return [](void* o, const void* a, const void* b, size_t n) { elementwise<T>(o, a, b, n, [](T x, T y) { return T(x | y); }); };
      case BXOR: return [](void* o, const void* a, const void* b, size_t n) { elementwise<T>(o, a, b, n, [](T x, T y) { return T(x ^ y); }); };
    }
  }
  throw std::invalid_argument("reduce op not supported for this dtype");
}

// 16-bit floats reduce in float and round once per step (as PyTorch's Gloo group does).
template <typename H, H (*From)(float)>
gloo::AllreduceOptions::Func half_fn(int op) {
  float (*cv)(H) = [](H h) { return to_float(h); };
  (void)cv;
  switch (op) {
    case SUM: return [](void* o, const void* a, const void* b, size_t n) { elementwise<H>(o, a, b, n, [](H x, H y) { return From(to_float(x) + to_float(y)); }); };
    case PRODUCT: return [](void* o, const void* a, const void* b, size_t n) { elementwise<H>(o, a, b, n, [](H x, H y) { return From(to_float(x) * to_float(y)); }); };
    case MIN: return [](void* o, const void* a, const void* b, size_t n) {
      elementwise<H>(o, a, b, n, [](H x, H y) { float fx = to_float(x), fy = to_float(y); if (fx != fx) return x; if (fy != fy) return y; return fy < fx ? y : x; }); };
    case MAX: return [](void* o, const void* a, const void* b, size_t n) {
      elementwise<H>(o, a, b, n, [](H x, H y) { float fx = to_float(x), fy = to_float(y); if (fx != fx) return x; if (fy != fy) return y; return fx < fy ? y : x; }); };
  }
  throw std::invalid_argument("bitwise reduce ops need an integer or bool tensor");
}

gloo::AllreduceOptions::Func bool_fn(int op) {
  switch (op) {
    case SUM: case MAX: case BOR: return [](void* o, const void* a, const void* b, size_t n) { elementwise<uint8_t>(o, a, b, n, [](uint8_t x, uint8_t y) { return uint8_t(x || y); }); };
    case PRODUCT: case MIN: case BAND: return [](void* o, const void* a, const void* b, size_t n) { elementwise<uint8_t>(o, a, b, n, [](uint8_t x, uint8_t y) { return uint8_t(x && y); }); };
    case BXOR: return [](void* o, const void* a, const void* b, size_t n) { elementwise<uint8_t>(o, a, b, n, [](uint8_t x, uint8_t y) { return uint8_t((x != 0) != (y != 0)); }); };
  }
  throw std::invalid_argument("unknown reduce op");
}

gloo::AllreduceOptions::Func reduce_fn(int dt, int op) {
  switch (dt) {
    case F32: return arith_fn<float>(op);
    case F64: return arith_fn<double>(op);
    case F16: return half_fn<Half16, from_float_h>(op);
    case BF16: return half_fn<BFloat16, from_float_b>(op);
    case I8: return arith_fn<int8_t>(op);
    case U8: return arith_fn<uint8_t>(op);
    case I16: return arith_fn<int16_t>(op);
    case I32: return arith_fn<int32_t>(op);
    case I64: return arith_fn<int64_t>(op);
    case BOOL: return bool_fn(op);
  }
  throw std::invalid_argument("unsupported dtype code");
}

// Gloo sizes its chunks by the element size of the pointer type it is given; the reduce
// functions above know the real type, so an unsigned type of the same width stands in.
template <typename Fn>
void with_width(size_t isz, uintptr_t ptr, Fn&& f) {
  switch (isz) {
    case 1: f(reinterpret_cast<uint8_t*>(ptr)); return;
    case 2: f(reinterpret_cast<uint16_t*>(ptr)); return;
    case 4: f(reinterpret_cast<uint32_t*>(ptr)); return;
    case 8: f(reinterpret_cast<uint64_t*>(ptr)); return;
  }
  throw std::invalid_argument("unsupported element size");
}

// ---- Work: the handle of one operation ----
class Work {
 public:
  // Blocks (GIL released) until done; raises the operation's error. timeout_ms <= 0: no limit.
  bool wait(long timeout_ms) {
    if (waiter_) {  // point-to-point: wait on Gloo's buffer here
      std::function<void()> w;
      { std::lock_guard<std::mutex> l(m_); w = std::move(waiter_); waiter_ = nullptr; }
      if (w) {
        nb::gil_scoped_release r;
        try { w(); finish(nullptr); } catch (...) { finish(std::current_exception()); }
      }
    }
    {
      nb::gil_scoped_release r;
      std::unique_lock<std::mutex> l(m_);
      if (timeout_ms > 0) {
        if (!cv_.wait_for(l, ms(timeout_ms), [&] { return done_; }))
          throw std::runtime_error("Work.wait timed out after " + std::to_string(timeout_ms) + " ms");
      } else {
        cv_.wait(l, [&] { return done_; });
      }
    }
    if (err_) std::rethrow_exception(err_);
    return true;
  }
  bool is_completed() { std::lock_guard<std::mutex> l(m_); return done_; }
  bool is_success() { std::lock_guard<std::mutex> l(m_); return done_ && !err_; }
  std::string exception_message() {
    std::lock_guard<std::mutex> l(m_);
    if (!err_) return "";
    try { std::rethrow_exception(err_); } catch (const std::exception& e) { return e.what(); } catch (...) { return "unknown error"; }
  }
  void finish(std::exception_ptr e) {
    { std::lock_guard<std::mutex> l(m_); done_ = true; err_ = e; }
    cv_.notify_all();
  }
  void set_waiter(std::function<void()> w) { waiter_ = std::move(w); }
  int source_rank() const { return src_; }
  void set_source_rank(int r) { src_ = r; }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr err_;
  std::function<void()> waiter_;
  int src_ = -1;  // a finished recv's peer
};

// ---- the process group ----
class ProcessGroupGloo {
 public:
  ProcessGroupGloo(nb::object store, std::string prefix, int rank, int size, long timeout_ms,
                   std::string hostname)
      : rank_(rank), size_(size), timeout_(timeout_ms) {
    if (size < 1 || rank < 0 || rank >= size)
      throw std::invalid_argument("ProcessGroupGloo: rank " + std::to_string(rank) + " out of range for world_size " + std::to_string(size));
    auto pystore = std::make_shared<PyStore>(std::move(store), std::move(prefix));
    {
      nb::gil_scoped_release r;
      gloo::transport::tcp::attr attr(hostname.empty() ? "127.0.0.1" : hostname.c_str());
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
      ctx->setTimeout(ms(timeout_ms));
      ctx->connectFullMesh(*pystore, device_);
      ctx_ = ctx;
    }
    store_ = pystore;
    worker_ = std::thread([this] { run(); });
  }
  ~ProcessGroupGloo() { shutdown(); }

  void shutdown() {
    {
      std::lock_guard<std::mutex> l(m_);
      if (stop_) return;
      stop_ = true;
    }
    cv_.notify_all();
    nb::gil_scoped_release r;
    if (worker_.joinable()) worker_.join();
    ctx_.reset();
    device_.reset();
  }

  int rank() const { return rank_; }
  int size() const { return size_; }

  std::shared_ptr<Work> enqueue(std::function<void(uint32_t)> fn) {
    auto w = std::make_shared<Work>();
    {
      std::lock_guard<std::mutex> l(m_);
      if (stop_) throw std::runtime_error("the process group has been destroyed");
      uint32_t tag = next_tag_++;
      q_.emplace_back([w, fn = std::move(fn), tag] {
        try { fn(tag); w->finish(nullptr); } catch (...) { w->finish(std::current_exception()); }
      });
    }
    cv_.notify_one();
    return w;
  }

  std::shared_ptr<Work> allreduce(uintptr_t ptr, size_t n, int dt, int op) {
    auto fn = reduce_fn(dt, op);
    size_t isz = itemsize(dt);
    return enqueue([=, this](uint32_t tag) {
      gloo::AllreduceOptions o(ctx_);
      with_width(isz, ptr, [&](auto* p) { o.setOutput(p, n); });
      o.setReduceFunction(fn);
      o.setTag(tag);
      o.setTimeout(ms(timeout_));
      gloo::allreduce(o);
    });
  }

  std::shared_ptr<Work> reduce(uintptr_t ptr, size_t n, int dt, int op, int root) {
    auto fn = reduce_fn(dt, op);
    size_t isz = itemsize(dt);
    check_rank(root);
    return enqueue([=, this](uint32_t tag) {
      gloo::ReduceOptions o(ctx_);
      with_width(isz, ptr, [&](auto* p) { o.setOutput(p, n); });
      o.setRoot(root);
      o.setReduceFunction(fn);
      o.setTag(tag);
      o.setTimeout(ms(timeout_));
      o.setMaxSegmentSize(((size_t(1) << 20) / isz) * isz);
      gloo::reduce(o);
    });
  }

  std::shared_ptr<Work> broadcast(uintptr_t ptr, size_t nbytes, int root) {
    check_rank(root);
    return enqueue([=, this](uint32_t tag) {
      gloo::BroadcastOptions o(ctx_);
      o.setOutput(reinterpret_cast<char*>(ptr), nbytes);
      o.setRoot(root);
      o.setTag(tag);
      o.setTimeout(ms(timeout_));
      gloo::broadcast(o);
    });
  }

  // out holds size * nbytes: rank r's input lands at r * nbytes.
  std::shared_ptr<Work> allgather(uintptr_t in, uintptr_t out, size_t nbytes) {
    return enqueue([=, this](uint32_t tag) {
      gloo::AllgatherOptions o(ctx_);
      if (in) o.setInput(reinterpret_cast<char*>(in), nbytes);
      o.setOutput(reinterpret_cast<char*>(out), nbytes * size_);
      o.setTag(tag);
      o.setTimeout(ms(timeout_));
      gloo::allgather(o);
    });
  }

  std::shared_ptr<Work> gather(uintptr_t in, uintptr_t out, size_t nbytes, int root) {
    check_rank(root);
    return enqueue([=, this](uint32_t tag) {
      gloo::GatherOptions o(ctx_);
      o.setInput(reinterpret_cast<char*>(in), nbytes);
      if (rank_ == root) o.setOutput(reinterpret_cast<char*>(out), nbytes * size_);
      o.setRoot(root);
      o.setTag(tag);
      o.setTimeout(ms(timeout_));
      gloo::gather(o);
    });
  }

  std::shared_ptr<Work> scatter(std::vector<uintptr_t> ins, uintptr_t out, size_t nbytes, int root) {
    check_rank(root);
    if (rank_ == root && ins.size() != size_t(size_))
      throw std::invalid_argument("scatter: the root needs one input per rank");
    return enqueue([=, this](uint32_t tag) {
      gloo::ScatterOptions o(ctx_);
      if (rank_ == root) {
        std::vector<char*> p;
        for (auto a : ins) p.push_back(reinterpret_cast<char*>(a));
        o.setInputs(p, nbytes);
      }
      o.setOutput(reinterpret_cast<char*>(out), nbytes);
      o.setRoot(root);
      o.setTag(tag);
      o.setTimeout(ms(timeout_));
      gloo::scatter(o);
    });
  }

  // in and out hold size * nbytes; block r of in goes to rank r.
  std::shared_ptr<Work> alltoall(uintptr_t in, uintptr_t out, size_t nbytes) {
    return enqueue([=, this](uint32_t tag) {
      gloo::AlltoallOptions o(ctx_);
      o.setInput(reinterpret_cast<char*>(in), nbytes * size_);
      o.setOutput(reinterpret_cast<char*>(out), nbytes * size_);
      o.setTag(tag);
      o.setTimeout(ms(timeout_));
      gloo::alltoall(o);
    });
  }

  std::shared_ptr<Work> barrier() {
    return enqueue([=, this](uint32_t tag) {
      gloo::BarrierOptions o(ctx_);
      o.setTag(tag);
      o.setTimeout(ms(timeout_));
      gloo::barrier(o);
    });
  }

  // Point to point: posted now, completed by Work.wait (Gloo matches by peer and slot).
  std::shared_ptr<Work> send(uintptr_t ptr, size_t nbytes, int dst, uint32_t tag) {
    check_rank(dst);
    auto buf = std::shared_ptr<gloo::transport::UnboundBuffer>(
        ctx_->createUnboundBuffer(reinterpret_cast<void*>(ptr), nbytes));
    buf->send(dst, p2p_slot(tag));
    auto w = std::make_shared<Work>();
    long t = timeout_;
    w->set_waiter([buf, t] { buf->waitSend(ms(t)); });
    return w;
  }
  std::shared_ptr<Work> recv(uintptr_t ptr, size_t nbytes, int src, uint32_t tag) {
    auto buf = std::shared_ptr<gloo::transport::UnboundBuffer>(
        ctx_->createUnboundBuffer(reinterpret_cast<void*>(ptr), nbytes));
    if (src >= 0) {
      check_rank(src);
      buf->recv(src, p2p_slot(tag));
    } else {  // any source
      std::vector<int> peers;
      for (int r = 0; r < size_; ++r) if (r != rank_) peers.push_back(r);
      buf->recv(peers, p2p_slot(tag));
    }
    auto w = std::make_shared<Work>();
    long t = timeout_;
    Work* self = w.get();  // the waiter lives in (and runs from) this Work
    w->set_waiter([buf, t, self] { int r = -1; buf->waitRecv(&r, ms(t)); self->set_source_rank(r); });
    return w;
  }

 private:
  static uint64_t p2p_slot(uint32_t tag) { return (uint64_t(0x7f) << 56) | tag; }
  void check_rank(int r) const {
    if (r < 0 || r >= size_)
      throw std::invalid_argument("Invalid rank " + std::to_string(r) + " for a group of size " + std::to_string(size_));
  }
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return stop_ || !q_.empty(); });
        if (q_.empty()) return;
        job = std::move(q_.front());
        q_.pop_front();
      }
      job();
    }
  }

  int rank_, size_;
  long timeout_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> ctx_;
  std::shared_ptr<PyStore> store_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  bool stop_ = false;
  uint32_t next_tag_ = 1;
  std::thread worker_;
};

}  // namespace tp_dist

NB_MODULE(_C_distributed, m) {
  using namespace tp_dist;
  m.attr("gloo_version") = nb::str((std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." + std::to_string(GLOO_VERSION_PATCH)).c_str());
  nb::class_<Work>(m, "Work")
      .def("wait", &Work::wait, nb::arg("timeout_ms") = 0)
      .def("is_completed", &Work::is_completed)
      .def("is_success", &Work::is_success)
      .def("exception_message", &Work::exception_message)
      .def("source_rank", &Work::source_rank);
  nb::class_<ProcessGroupGloo>(m, "ProcessGroupGloo")
      .def(nb::init<nb::object, std::string, int, int, long, std::string>(),
           nb::arg("store"), nb::arg("prefix"), nb::arg("rank"), nb::arg("size"),
           nb::arg("timeout_ms"), nb::arg("hostname") = "")
      .def("rank", &ProcessGroupGloo::rank)
      .def("size", &ProcessGroupGloo::size)
      .def("shutdown", &ProcessGroupGloo::shutdown)
      .def("allreduce", &ProcessGroupGloo::allreduce)
      .def("reduce", &ProcessGroupGloo::reduce)
      .def("broadcast", &ProcessGroupGloo::broadcast)
      .def("allgather", &ProcessGroupGloo::allgather)
      .def("gather", &ProcessGroupGloo::gather)
      .def("scatter", &ProcessGroupGloo::scatter)
      .def("alltoall", &ProcessGroupGloo::alltoall)
      .def("barrier", &ProcessGroupGloo::barrier)
      .def("send", &ProcessGroupGloo::send)
      .def("recv", &ProcessGroupGloo::recv);
}
