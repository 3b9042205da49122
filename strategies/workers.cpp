#include "strategies/workers.h"

// MPI's C API only: without these, mpi.h also declares the deprecated C++ bindings, which live in
// another library (libmpi_cxx).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>
#include <vector>

#include "framework/core/error.h"

namespace kestrel::distribute {
namespace {

// What a launcher of MPI jobs sets in each process it starts (Open MPI's mpirun; PMIx and PMI for
// others), so a process started alone never initializes MPI.
bool started_by_mpi_launcher() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<std::int64_t>() {
  return MPI_INT64_T;
}

// Adds in worker order; integers as unsigned, so that overflow wraps instead of being undefined.
template <class T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
  } else {
    return a + b;
  }
}

// Worker w's share of n elements: [begin, begin + count), the first n % W workers one more.
struct Share {
  int begin;
  int count;
};
Share share_of(std::size_t n, int workers, int w) {
  const auto base = static_cast<int>(n / static_cast<std::size_t>(workers));
  const auto extra = static_cast<int>(n % static_cast<std::size_t>(workers));
  return {.begin = w * base + std::min(w, extra), .count = base + (w < extra ? 1 : 0)};
}

}  // namespace

// The job's MPI state: initialized by Kestrel (and so finalized by it) or by the user before.
struct Workers::Mpi {
  MPI_Comm comm = MPI_COMM_NULL;
  bool finalize = false;
  int count = 1;
  int index = 0;
  // Collectives come from whichever replica thread reaches a merge point, one at a time
  // (MPI_THREAD_SERIALIZED); the lock makes that so and guards the staging buffers.
  std::mutex lock;
  std::vector<std::byte> staging;
  std::vector<int> counts, begins, mine_counts, mine_begins;
  Traffic traffic;  // under the lock

  Mpi() = default;
  Mpi(const Mpi&) = delete;
  Mpi& operator=(const Mpi&) = delete;
  ~Mpi() {
    // A user who initialized MPI may have finalized it already, after which no call is allowed.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) return;
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    if (finalize) MPI_Finalize();
  }

  static void check(int code, const char* call) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw Error(std::string("workers: ") + call + " failed: " + std::string(text, static_cast<std::size_t>(length)) +
                "; a worker of the job may have stopped (mpirun names it)");
  }

  // Holds the lock for one collective and adds its time and bytes to the traffic.
  class Call {
   public:
    Call(Mpi& mpi, std::int64_t bytes_sent) : mpi_(mpi), hold_(mpi.lock), start_(std::chrono::steady_clock::now()) {
      mpi_.traffic.bytes_sent += bytes_sent;
      mpi_.traffic.calls += 1;
    }
    ~Call() {
      mpi_.traffic.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    Mpi& mpi_;
    std::lock_guard<std::mutex> hold_;
    std::chrono::steady_clock::time_point start_;
  };

  template <class T>
  void sum(std::span<T> values) {
    if (values.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw ValueError("workers: a sum of " + std::to_string(values.size()) +
                       " elements is more than one MPI call counts (2^31 - 1); sum it in parts");
    }
    const auto w = static_cast<std::size_t>(count);
    const Share mine = share_of(values.size(), count, index);
    // Out: the others' shares to their owners, then this worker's sums to each of the others.
    const std::size_t sent =
        (values.size() - static_cast<std::size_t>(mine.count)) + static_cast<std::size_t>(mine.count) * (w - 1);
    const Call call(*this, static_cast<std::int64_t>(sent * sizeof(T)));
    counts.resize(w);
    begins.resize(w);
    for (std::size_t i = 0; i < w; ++i) {
      const Share s = share_of(values.size(), count, static_cast<int>(i));
      counts[i] = s.count;
      begins[i] = s.begin;
    }
    // Every worker's values for this worker's share, in worker order.
    staging.resize(w * static_cast<std::size_t>(mine.count) * sizeof(T));
    T* received = reinterpret_cast<T*>(staging.data());
    mine_counts.assign(w, mine.count);
    mine_begins.resize(w);
    for (std::size_t i = 0; i < w; ++i) mine_begins[i] = static_cast<int>(i) * mine.count;
    check(MPI_Alltoallv(values.data(), counts.data(), begins.data(), mpi_type<T>(), received, mine_counts.data(),
                        mine_begins.data(), mpi_type<T>(), comm),
          "MPI_Alltoallv (the sum's reduce-scatter)");
    T* out = values.data() + mine.begin;
    for (int j = 0; j < mine.count; ++j) {
      T total = received[j];
      for (std::size_t i = 1; i < w; ++i) total = add(total, received[i * static_cast<std::size_t>(mine.count) + j]);
      out[j] = total;
    }
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, mpi_type<T>(), values.data(), counts.data(), begins.data(), mpi_type<T>(),
                         comm),
          "MPI_Allgatherv (the sum's all-gather)");
  }
};

Workers::Workers(int count, int index, std::unique_ptr<Mpi> mpi) : count_(count), index_(index), mpi_(std::move(mpi)) {}

Workers::~Workers() = default;

std::shared_ptr<const Workers> Workers::local() {
  static const std::shared_ptr<const Workers> alone(new Workers(1, 0, nullptr));
  return alone;
}

std::shared_ptr<const Workers> Workers::of_this_job() {
  static const std::shared_ptr<const Workers> job = []() -> std::shared_ptr<const Workers> {
    if (!started_by_mpi_launcher()) return local();
    auto mpi = std::make_unique<Mpi>();
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = 0;
    if (initialized == 0) {
      Mpi::check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      mpi->finalize = true;
    } else {
      MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_SERIALIZED) {
      throw Error("workers: MPI runs at thread level " + std::to_string(provided) +
                  " but replicas call collectives from their own threads, one at a time (MPI_THREAD_SERIALIZED); " +
                  (initialized == 0
                       ? std::string("use an MPI built with thread support (Debian's Open MPI is)")
                       : std::string("initialize MPI with MPI_Init_thread(..., MPI_THREAD_SERIALIZED, ...)")));
    }
    Mpi::check(MPI_Comm_dup(MPI_COMM_WORLD, &mpi->comm), "MPI_Comm_dup");
    // A failed collective throws with MPI's words instead of aborting the job without them.
    MPI_Comm_set_errhandler(mpi->comm, MPI_ERRORS_RETURN);
    MPI_Comm_size(mpi->comm, &mpi->count);
    MPI_Comm_rank(mpi->comm, &mpi->index);
    const int count = mpi->count, index = mpi->index;
    return std::shared_ptr<const Workers>(new Workers(count, index, std::move(mpi)));
  }();
  return job;
}

void Workers::sum(std::span<float> values) const {
  if (mpi_ && count_ > 1) mpi_->sum(values);
}
void Workers::sum(std::span<double> values) const {
  if (mpi_ && count_ > 1) mpi_->sum(values);
}
void Workers::sum(std::span<std::int64_t> values) const {
  if (mpi_ && count_ > 1) mpi_->sum(values);
}

void Workers::gather_in_place(std::span<std::byte> all) const {
  if (all.size() % static_cast<std::size_t>(count_) != 0) {
    throw ValueError("workers: gather_in_place got " + std::to_string(all.size()) + " bytes for " +
                     std::to_string(count_) + " workers; it needs one block of equal size per worker");
  }
  if (!mpi_ || count_ == 1) return;
  const std::size_t block = all.size() / static_cast<std::size_t>(count_);
  if (block > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw ValueError("workers: a gathered block of " + std::to_string(block) +
                     " bytes is more than one MPI call counts (2^31 - 1)");
  }
  const Mpi::Call call(*mpi_, static_cast<std::int64_t>(block) * (count_ - 1));
  Mpi::check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, all.data(), static_cast<int>(block), MPI_BYTE, mpi_->comm),
             "MPI_Allgather");
}

void Workers::barrier(std::string_view why) const {
  if (!mpi_ || count_ == 1) return;
  const Mpi::Call call(*mpi_, 0);
  Mpi::check(MPI_Barrier(mpi_->comm), ("MPI_Barrier (" + std::string(why) + ")").c_str());
}

void Workers::abort(int exit_code, std::string_view why) const {
  std::fprintf(stderr, "worker %d of %d: %.*s; ending the job\n", index_, count_, static_cast<int>(why.size()),
               why.data());
  std::fflush(stderr);
  if (mpi_) MPI_Abort(mpi_->comm, exit_code);
  std::_Exit(exit_code);
}

std::int64_t Workers::max(std::int64_t value) const {
  if (!mpi_ || count_ == 1) return value;
  const Mpi::Call call(*mpi_, static_cast<std::int64_t>(sizeof value) * (count_ - 1));
  std::int64_t out = value;
  // A maximum is the same whatever order MPI takes the values in.
  Mpi::check(MPI_Allreduce(&value, &out, 1, MPI_INT64_T, MPI_MAX, mpi_->comm), "MPI_Allreduce (max)");
  return out;
}

void Workers::check_same(std::string_view what, const std::string& description) const {
  if (!mpi_ || count_ == 1) return;
  // Every worker's description, each in a block as long as the longest.
  const auto longest = static_cast<std::size_t>(max(static_cast<std::int64_t>(description.size())));
  std::vector<std::byte> all(longest * static_cast<std::size_t>(count_), std::byte{0});
  std::memcpy(all.data() + longest * static_cast<std::size_t>(index_), description.data(), description.size());
  gather_in_place(all);
  const auto text_of = [&](int w) {
    const char* begin = reinterpret_cast<const char*>(all.data()) + longest * static_cast<std::size_t>(w);
    return std::string(begin, strnlen(begin, longest));
  };
  const std::string chief = text_of(0);
  std::string differ;
  for (int w = 1; w < count_; ++w) {
    if (const std::string theirs = text_of(w); theirs != chief) {
      differ += "; worker " + std::to_string(w) + " has " + theirs;
    }
  }
  if (!differ.empty()) {
    throw ValueError("workers: " + std::string(what) + " differ between the workers: worker 0 (the chief) has " +
                     chief + differ + ". Every worker must run the same program with the same settings");
  }
}

Workers::Traffic Workers::traffic() const {
  if (!mpi_) return {};
  const std::lock_guard<std::mutex> hold(mpi_->lock);
  return mpi_->traffic;
}

}  // namespace kestrel::distribute
