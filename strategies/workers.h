// Workers: the processes of one training job, one per MPI rank, and the collectives between them
// (what MultiWorkerMirroredStrategy and a TPU pod slice's TPUStrategy combine their replicas' values
// with once each process has combined its own).
//
//   // mpirun -np 2 ./train
//   std::shared_ptr<const distribute::Workers> workers = distribute::Workers::of_this_job();
//   workers->count();         // 2
//   workers->is_chief();      // true on rank 0
//   workers->sum(gradients);  // element-wise over the workers, the same bits on each
//
// Started without mpirun, the job is this process alone: one worker, and MPI is never initialized.
// Under mpirun, MPI is initialized on first use (MPI_THREAD_SERIALIZED: a collective may come from
// any replica thread, one at a time) and finalized when the process exits; the collectives run on
// a communicator of their own, so a user's MPI calls on MPI_COMM_WORLD never meet them.
//
// Sums are bitwise reproducible: each worker owns a contiguous 1/W of the elements, receives every
// worker's values for them and adds them in worker order (a reduce-scatter), then every worker
// receives every owner's sums (an all-gather). MPI_Allreduce would be one call, but the order it adds
// in depends on the algorithm MPI picks for the message size and the number of processes. Each
// worker sends and receives 2 (W - 1) / W of the bytes summed, as a ring all-reduce does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace kestrel::distribute {

class Workers {
 public:
  /// This job's workers: every rank of the MPI job when mpirun started this process (MPI is
  /// initialized here on the first call), else this process alone. One object per process.
  static std::shared_ptr<const Workers> of_this_job();
  /// This process alone, whatever started it.
  static std::shared_ptr<const Workers> local();

  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  int count() const { return count_; }
  /// This process's rank: 0 is the chief, which writes checkpoints and logs.
  int index() const { return index_; }
  bool is_chief() const { return index_ == 0; }
  /// True when the workers are the ranks of an MPI job (mpirun), false for a process alone.
  bool over_mpi() const { return mpi_ != nullptr; }

  /// Each element becomes its sum over the workers, added in worker order (see above); the same
  /// span on every worker, of the same length. Integers wrap modulo 2^64 on overflow.
  void sum(std::span<float> values) const;
  void sum(std::span<double> values) const;
  void sum(std::span<std::int64_t> values) const;
  /// `all` holds count() blocks of equal size; each worker brings its own block (block index()) and
  /// ends with everyone's, in worker order (MPI_Allgather in place).
  void gather_in_place(std::span<std::byte> all) const;
  /// Returns when every worker has called it (MPI_Barrier); `why` names the call in errors.
  void barrier(std::string_view why) const;
  /// Ends the whole job now (MPI_Abort), with `exit_code`, after printing `why` to stderr: what a
  /// worker does with an error the others cannot know of. Returning from main instead would wait
  /// in MPI_Finalize for workers that wait in a collective for it. Alone, exits the process.
  [[noreturn]] void abort(int exit_code, std::string_view why) const;
  /// The largest of the workers' values, the same on each.
  std::int64_t max(std::int64_t value) const;
  /// Throws ValueError unless every worker passed the same `description` of `what` (the model's
  /// weights, the global batch), naming the workers that differ and what they have, so a worker
  /// started with another model fails at once rather than summing mismatched gradients.
  void check_same(std::string_view what, const std::string& description) const;

  /// What this worker's collectives have cost so far (multi_worker_bench's figures).
  struct Traffic {
    std::int64_t bytes_sent = 0;  ///< to the other workers
    double seconds = 0;           ///< inside MPI calls, waiting for the others included
    std::int64_t calls = 0;
  };
  Traffic traffic() const;

 private:
  struct Mpi;
  Workers(int count, int index, std::unique_ptr<Mpi> mpi);

  int count_;
  int index_;
  std::unique_ptr<Mpi> mpi_;  // null for a process alone
};

}  // namespace kestrel::distribute
