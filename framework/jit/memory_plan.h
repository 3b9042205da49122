// Memory plan: where every intermediate value of a compiled program lives in one arena, decided once at
// compile time by liveness, so a run allocates nothing but its outputs.
//
//   jit::MemoryPlan plan = jit::plan_memory(graph);
//   plan.values[id].storage;   // Storage::arena, and plan.values[id].offset is its place in the arena
//   plan.arena_bytes;          // one Buffer of this size serves every run
//   plan.to_string();          // "arena 1.5 MiB for 41 intermediates (6.2 MiB separately, 4.7 MiB saved), ..."
//
// Rules (DESIGN §8.7, as ggml-alloc): a value lives from the node that makes it to its last use, and a view
// (reshape) keeps the value it aliases alive. A single-consumer elementwise op whose output is as large as
// its input writes in place into that input when nothing else can still read it; otherwise it takes the
// best-fitting freed block, or the arena grows. Graph inputs and constants are the caller's memory, and
// graph outputs get their own buffer each run: neither is in the arena.
//
// Donation: an output aliased to a graph input (Graph::alias_output) goes into that input's buffer
// when a run donates it. Its kernel writes there directly when no later kernel reads the input (or
// it is an elementwise kernel reading the input at the index it writes); otherwise it writes an arena
// block, copied into the donated buffer after the last kernel. Either way a donated run allocates
// nothing for it. plan.aliases says which, per aliased output.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/jit/graph.h"

namespace kestrel::jit {

/// Where a value's data lives while the program runs.
enum class Storage : std::uint8_t {
  input,     ///< the caller's tensor
  constant,  ///< the captured tensor, owned by the graph
  arena,     ///< a block of the executor's arena
  output,    ///< a buffer allocated each run and returned to the caller
  view,      ///< the memory of `root` (reshape): no storage of its own
};

/// How an aliased output reaches its input's buffer in a run that donates the input.
enum class AliasWrite : std::uint8_t {
  unchanged,  ///< the output is the input itself (or a view of it): the buffer already holds it
  direct,     ///< its kernel writes into the donated buffer: every other reader of the input runs before
  at_end,     ///< its kernel writes the arena block `offset`, copied into the donated buffer at the end
  copy,       ///< it is a constant, another input (saved at `offset` first), or a value other outputs
              ///< share: copied into the donated buffer at the end
};

struct AliasPlan {
  std::size_t output_index = 0;  ///< position in graph.outputs()
  std::size_t input_index = 0;   ///< position in graph.inputs()
  ValueId root = -1;             ///< the value whose memory holds the new value
  AliasWrite write = AliasWrite::unchanged;
  /// at_end: the block the root's kernel writes in a donated run; copy of another input: the block
  /// that input is saved to before any kernel runs (a donated run may overwrite it).
  std::int64_t offset = -1;
};

struct ValuePlan {
  Storage storage = Storage::arena;
  ValueId root = -1;            ///< the value whose memory this one uses (itself unless a view)
  std::int64_t offset = -1;     ///< arena only: byte offset, a multiple of Buffer::kAlignment
  std::int64_t bytes = 0;       ///< own storage, rounded up to the alignment (0 for views)
  ValueId in_place_of = -1;     ///< arena only: the value whose block this one took over in place
  std::int64_t live_from = -1;  ///< own storage: the node that makes it ...
  std::int64_t live_to = -1;    ///< ... and its last reader, through views too; past the last node
                                ///< for a value copied into a donated buffer at the end
  /// Float32 copies of bfloat16 operands for a float32-only kernel, live only during this node.
  std::int64_t scratch_offset = -1;
  std::int64_t scratch_bytes = 0;
};

/// Bytes per element type, as the memory plan and the memory reports count them.
using BytesByDtype = std::map<DType, std::int64_t>;

struct MemoryPlan {
  std::vector<ValuePlan> values;        ///< one per graph value
  std::vector<AliasPlan> aliases;       ///< one per aliased output, in output order
  std::int64_t arena_bytes = 0;         ///< the arena's size: the planned peak of intermediates
  std::int64_t live_peak_bytes = 0;     ///< most intermediate bytes live at one node: no layout needs less
  BytesByDtype live_peak_by_dtype;      ///< the same bytes by dtype (widening scratch is float32)
  std::int64_t intermediate_bytes = 0;  ///< what allocating each intermediate separately would take
  std::int64_t scratch_bytes = 0;       ///< all bfloat16-widening scratch, if each were separate
  std::int64_t output_bytes = 0;        ///< allocated by each run, outside the arena
  std::int64_t pinned_bytes = 0;        ///< graph inputs and constants (not the plan's to place)
  std::int64_t num_intermediates = 0;
  std::int64_t in_place_reuses = 0;
  std::int64_t donated_bytes = 0;  ///< aliased outputs' bytes, written into donated buffers

  /// Number of aliased outputs written as `write`.
  std::int64_t num_aliases(AliasWrite write) const;

  /// Bytes the arena saves over allocating every intermediate on its own.
  std::int64_t bytes_saved() const { return intermediate_bytes + scratch_bytes - arena_bytes; }
  /// One line for the compile log.
  std::string to_string() const;
};

/// "direct", "at_end", ... for logs and errors.
std::string_view to_string(AliasWrite write);

/// Plans the memory of every value of `graph` (one pass in graph order, O(n log n)).
MemoryPlan plan_memory(const Graph& graph);

/// `bytes` rounded up to Buffer::kAlignment: every arena block starts aligned, as a fresh Buffer would.
std::int64_t aligned_bytes(std::int64_t bytes);
/// Bytes as logs show them: "512 B", "1.5 KiB", "2.53 MiB", "16.00 GiB".
std::string format_bytes(std::int64_t bytes);
/// "1.50 MiB bfloat16 + 12.0 KiB float32", largest first ("0 B" when empty).
std::string format_bytes(const BytesByDtype& bytes);
/// The sum over the dtypes.
std::int64_t total_bytes(const BytesByDtype& bytes);

/// True when `node` runs a float32-only kernel on bfloat16 data, which needs float32 scratch copies.
bool needs_widening(const Graph& graph, const Node& node);

/// Offsets inside an arena: best fit among free blocks (splitting them), freed neighbours merged,
/// and growth at the end only when nothing fits. plan_memory's allocator, public for its tests.
class ArenaAllocator {
 public:
  /// Reserves `bytes` (a multiple of the alignment) and returns its offset.
  std::int64_t allocate(std::int64_t bytes);
  /// Returns a block given by allocate(); adjacent free blocks merge.
  void release(std::int64_t offset, std::int64_t bytes);
  /// The arena's size so far: the highest end of any block ever reserved.
  std::int64_t size() const { return end_; }
  /// Number of free blocks (after merging).
  std::size_t num_free_blocks() const { return by_offset_.size(); }

 private:
  void insert_free(std::int64_t offset, std::int64_t bytes);
  void erase_free(std::map<std::int64_t, std::int64_t>::iterator block);

  std::map<std::int64_t, std::int64_t> by_offset_;           // free blocks: offset -> bytes
  std::set<std::pair<std::int64_t, std::int64_t>> by_size_;  // the same blocks as (bytes, offset)
  std::int64_t end_ = 0;
};

}  // namespace kestrel::jit
