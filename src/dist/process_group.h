// A process group on LibTorch's c10d: a TCPStore for rendezvous and ProcessGroupGloo for the
// collectives on CPU (ProcessGroupNCCL where LibTorch was built with it and tensors are on a GPU).
// Every wait has a deadline: a collective that waits past it fails with an error that names the
// ranks that never reached it, instead of hanging.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/cluster.h"

namespace shoal::dist {

struct GroupOptions {
  std::string backend = "auto";  ///< gloo, nccl, or auto (nccl when built with it and CUDA is up)
  double timeout_s = 300;        ///< how long a collective may wait for the others
};

enum class Reduce { kSum, kMax, kMin };

/// An asynchronous collective; Wait() rethrows its failure with the group's context.
class Pending {
 public:
  Pending();
  Pending(Pending&&) noexcept;
  Pending& operator=(Pending&&) noexcept;
  ~Pending();
  void Wait();
  bool valid() const;

 private:
  friend class Group;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Group {
 public:
  /// Meets the other ranks at env.master_addr:master_port (rank 0 serves the store) within
  /// env.start_timeout_s, and builds the collectives' backend.
  static std::shared_ptr<Group> Create(const ClusterEnv& env, GroupOptions options = {});
  ~Group();

  int rank() const;
  int size() const;
  const ClusterEnv& env() const;
  const std::string& backend() const;

  /// In place, across every rank. `what` names the collective in errors.
  void AllReduce(at::Tensor& tensor, Reduce op, const std::string& what);
  Pending AllReduceAsync(at::Tensor tensor, const std::string& what);
  void Broadcast(at::Tensor& tensor, int root, const std::string& what);
  void Barrier(const std::string& what);
  /// Every rank's `mine`, by rank (through the store).
  std::vector<std::string> AllGather(const std::string& mine, const std::string& what);
  /// `root`'s `bytes` on every rank (through the store; for state, not for tensors of a step).
  std::string Share(const std::string& bytes, int root, const std::string& what);

 private:
  Group();
  friend class Pending;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal::dist
