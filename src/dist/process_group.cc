#include "dist/process_group.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#include <torch/cuda.h>
#endif

#include <chrono>
#include <cstdlib>
#include <thread>

#include "util/error.h"

namespace shoal::dist {

namespace {

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string Seconds(double s) {
  std::string t = std::to_string(s);
  t.erase(t.find_last_not_of('0') + 1);
  if (!t.empty() && t.back() == '.') t.pop_back();
  return t;
}

}  // namespace

struct Group::Impl {
  ClusterEnv env;
  GroupOptions options;
  std::string backend;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  int64_t seq = 0;  // collectives this rank has started

  // Wraps a collective's failure: which collective, on which rank, and which ranks had not
  // reached it (those that do not report in through the store within a few seconds).
  [[noreturn]] void Fail(int64_t at, const std::string& what, const std::string& cause) {
    std::string message = what + " (collective #" + std::to_string(at) + ") failed on rank " + std::to_string(env.rank) +
                          " of " + std::to_string(env.world_size) + ": " + FirstLine(cause);
    try {
      store->set("shoal/failed/" + std::to_string(env.rank), std::vector<uint8_t>{});
      std::string mine = std::to_string(at);
      store->set("shoal/at/" + std::to_string(env.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
      std::vector<int> missing, elsewhere;
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      for (int r = 0; r < env.world_size; ++r) {
        if (r == env.rank) continue;
        const std::string key = "shoal/at/" + std::to_string(r);
        while (!store->check({key}) && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (!store->check({key})) {
          missing.push_back(r);
        } else {
          std::vector<uint8_t> theirs = store->get(key);
          if (std::string(theirs.begin(), theirs.end()) != mine) elsewhere.push_back(r);
        }
      }
      auto list = [](const std::vector<int>& ranks) {
        std::string out;
        for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
        return out;
      };
      if (!missing.empty()) message += "; waiting for rank(s) " + list(missing) + ", which never reached it (gone or stuck)";
      if (!elsewhere.empty()) message += "; rank(s) " + list(elsewhere) + " failed at a different collective";
    } catch (const std::exception&) {
      message += "; the store on rank 0 (" + env.master_addr + ":" + std::to_string(env.master_port) +
                 ") is unreachable too, so rank 0 is likely gone";
    }
    throw TimeoutError(message);
  }

  void Wait(const c10::intrusive_ptr<c10d::Work>& work, int64_t at, const std::string& what) {
    try {
      work->wait();
    } catch (const std::exception& e) {
      Fail(at, what, e.what());
    }
  }
};

struct Pending::Impl {
  Group::Impl* group = nullptr;
  c10::intrusive_ptr<c10d::Work> work;
  int64_t at = 0;
  std::string what;
};

Pending::Pending() = default;
Pending::Pending(Pending&&) noexcept = default;
Pending& Pending::operator=(Pending&&) noexcept = default;
Pending::~Pending() = default;
bool Pending::valid() const { return impl_ && impl_->work; }

void Pending::Wait() {
  if (!valid()) return;
  auto impl = std::move(impl_);
  impl->group->Wait(impl->work, impl->at, impl->what);
}

Group::Group() : impl_(std::make_unique<Impl>()) {}
Group::~Group() = default;
int Group::rank() const { return impl_->env.rank; }
int Group::size() const { return impl_->env.world_size; }
const ClusterEnv& Group::env() const { return impl_->env; }
const std::string& Group::backend() const { return impl_->backend; }

std::shared_ptr<Group> Group::Create(const ClusterEnv& env, GroupOptions options) {
  if (!(options.timeout_s > 0)) throw InvalidError("the collective timeout must be positive");
  std::shared_ptr<Group> group(new Group());
  Impl& g = *group->impl_;
  g.env = env;
  g.options = options;
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(env.master_port);
    store_options.isServer = env.rank == 0;
    store_options.numWorkers = static_cast<size_t>(env.world_size);
    store_options.waitWorkers = true;
    store_options.timeout = Millis(env.start_timeout_s);
    g.store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    throw TimeoutError("rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) +
                       " could not meet the others at " + where + " within " + Seconds(env.start_timeout_s) +
                       " s (SHOAL_START_TIMEOUT): " + FirstLine(e.what()));
  }
  std::string backend = options.backend;
#ifdef USE_C10D_NCCL
  if (backend == "auto") backend = torch::cuda::is_available() ? "nccl" : "gloo";
#else
  if (backend == "auto") backend = "gloo";
  if (backend == "nccl") throw UnsupportedError("backend nccl needs a LibTorch built with CUDA and NCCL; this one is CPU-only");
#endif
  if (backend != "gloo" && backend != "nccl") throw InvalidError("unknown backend '" + backend + "' (known: gloo, nccl, auto)");
  g.backend = backend;
  try {
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("shoal/" + backend, g.store);
#ifdef USE_C10D_NCCL
    if (backend == "nccl") {
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = Millis(options.timeout_s);
      g.pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, env.rank, env.world_size, nccl_options);
    }
#endif
    if (backend == "gloo") {
      auto gloo_options = c10d::ProcessGroupGloo::Options::create(Millis(options.timeout_s));
      // The network device: GLOO_SOCKET_IFNAME names an interface; a job on one machine uses the
      // loopback; otherwise the address this host's name resolves to.
      if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface) {
        gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(iface));
      } else if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") {
        gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      } else {
        gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      gloo_options->threads = 2;
      g.pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, env.rank, env.world_size, gloo_options);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw TimeoutError("rank " + std::to_string(env.rank) + " could not connect to the other ranks (" + backend +
                       ", store at " + where + "): " + FirstLine(e.what()));
  }
  return group;
}

void Group::AllReduce(at::Tensor& tensor, Reduce op, const std::string& what) {
  std::vector<at::Tensor> tensors{tensor};
  c10d::AllreduceOptions o;
  o.reduceOp = op == Reduce::kSum ? c10d::ReduceOp::SUM : op == Reduce::kMax ? c10d::ReduceOp::MAX : c10d::ReduceOp::MIN;
  const int64_t at = ++impl_->seq;
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = impl_->pg->allreduce(tensors, o);
  } catch (const std::exception& e) {
    impl_->Fail(at, what, e.what());
  }
  impl_->Wait(work, at, what);
}

Pending Group::AllReduceAsync(at::Tensor tensor, const std::string& what) {
  std::vector<at::Tensor> tensors{std::move(tensor)};
  Pending p;
  p.impl_ = std::make_unique<Pending::Impl>();
  p.impl_->group = impl_.get();
  p.impl_->at = ++impl_->seq;
  p.impl_->what = what;
  try {
    p.impl_->work = impl_->pg->allreduce(tensors);
  } catch (const std::exception& e) {
    impl_->Fail(p.impl_->at, what, e.what());
  }
  return p;
}

void Group::Broadcast(at::Tensor& tensor, int root, const std::string& what) {
  std::vector<at::Tensor> tensors{tensor};
  c10d::BroadcastOptions o;
  o.rootRank = root;
  const int64_t at = ++impl_->seq;
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = impl_->pg->broadcast(tensors, o);
  } catch (const std::exception& e) {
    impl_->Fail(at, what, e.what());
  }
  impl_->Wait(work, at, what);
}

void Group::Barrier(const std::string& what) {
  // A one-element allreduce: Gloo's barrier has no per-call context to report.
  at::Tensor t = at::zeros({1});
  AllReduce(t, Reduce::kSum, what);
}

std::vector<std::string> Group::AllGather(const std::string& mine, const std::string& what) {
  const int64_t at = ++impl_->seq;
  const std::string prefix = "shoal/gather/" + std::to_string(at) + "/";
  std::vector<std::string> out(static_cast<size_t>(size()));
  try {
    impl_->store->set(prefix + std::to_string(rank()), std::vector<uint8_t>(mine.begin(), mine.end()));
    for (int r = 0; r < size(); ++r) {
      const std::string key = prefix + std::to_string(r);
      impl_->store->wait({key}, Millis(impl_->options.timeout_s));
      std::vector<uint8_t> v = impl_->store->get(key);
      out[r].assign(v.begin(), v.end());
    }
  } catch (const std::exception& e) {
    impl_->Fail(at, what, e.what());
  }
  return out;
}

std::string Group::Share(const std::string& bytes, int root, const std::string& what) {
  const int64_t at = ++impl_->seq;
  const std::string key = "shoal/share/" + std::to_string(at);
  try {
    if (rank() == root) impl_->store->set(key, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    impl_->store->wait({key}, Millis(impl_->options.timeout_s));
    if (rank() == root) return bytes;
    std::vector<uint8_t> v = impl_->store->get(key);
    return std::string(v.begin(), v.end());
  } catch (const std::exception& e) {
    impl_->Fail(at, what, e.what());
  }
}

}  // namespace shoal::dist
