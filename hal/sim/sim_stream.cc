#include "hal/sim/sim_stream.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "acl/acl_base.h"
#include "hal/sim/sim_device.h"
#include "hal/sim/sim_float_environment.h"
#include "hal/sim/sim_memory.h"
#include "hal/sim/sim_random.h"
#include "hal/sim/sim_reduce.h"
#include "hal/ring_queue.h"
#include "hal/sim/sim_status.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace hal::sim {
namespace {

// Longest busy time a sim kernel may ask for (about 12 days): keeps the
// deadline arithmetic far from overflow.
constexpr uint64_t kMaxBusyMicros = uint64_t{1} << 40;

// A sim kernel's busy time, which its arguments give per wave of blocks. A
// block takes one AI Core, an Atlas A2's pairing of one cube core with two
// vector cores, so the blocks that run at once are as many as both core
// limits leave (at least one); the rest wait for the next wave. Without
// limits a kernel of up to kSimCubeCores blocks runs in one wave.
uint64_t BusyMicrosOf(uint64_t per_wave, uint32_t block_dim, const CoreLimits& limits) {
  per_wave = std::min(per_wave, kMaxBusyMicros);
  if (per_wave == 0) return 0;
  const uint64_t cube = limits.cube != 0 ? limits.cube : kSimCubeCores;
  const uint64_t vector = limits.vector != 0 ? limits.vector : kSimVectorCores;
  const uint64_t at_once = std::max<uint64_t>(1, std::min(cube, vector / 2));
  const uint64_t waves = std::max<uint64_t>(1, (uint64_t{block_dim} + at_once - 1) / at_once);
  return waves > kMaxBusyMicros / per_wave ? kMaxBusyMicros : per_wave * waves;
}

// A kernel's view of device memory: the core's checked spans, as sim bytes.
class SpanBytes : public MemoryResolver {
 public:
  explicit SpanBytes(hal::MemoryResolver& checked) : checked_(checked) {}
  absl::StatusOr<uint8_t*> Resolve(uint64_t address, uint64_t bytes) override {
    absl::StatusOr<DeviceSpan> span = checked_.Resolve(address, bytes);
    if (!span.ok()) return span.status();
    return SimBytes(*span);
  }

 private:
  hal::MemoryResolver& checked_;
};

// Whether a value wait's condition holds now (aclrtValueWait's four flags).
bool ValueMeets(uint64_t current, uint64_t value, uint32_t flag) {
  switch (flag) {
    case ACL_STREAM_WAIT_VALUE_GEQ:
      return static_cast<int64_t>(current - value) >= 0;
    case ACL_STREAM_WAIT_VALUE_EQ:
      return current == value;
    case ACL_STREAM_WAIT_VALUE_AND:
      return (current & value) != 0;
    default:  // ACL_STREAM_WAIT_VALUE_NOR
      return ~(current | value) != 0;
  }
}

absl::Status NotOfThisDevice(const char* what) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat("the ", what, " does not belong to a sim device"));
}

}  // namespace

struct SimStream::Item {
  enum class Kind {
    kCopy,
    kFill,
    kLaunch,
    kRecord,
    kWait,
    kCallback,
    kReduce,
    kWaitValue,
    kRandom,
    kReportOverflows,
    kCopyOverflow,
    kClearOverflow,
  };
  // Every item but a launch, an event's record or wait and a host-callback
  // point keeps its operands out of line: every launch moves an Item through
  // the queue, so its size is on the launch path.
  struct Operands {
    Transfer transfer;                   // kCopy
    std::optional<DeviceSpan> fill_dst;  // kFill
    uint8_t fill_value = 0;
    uint64_t fill_count = 0;
    Reduction reduction;                     // kReduce
    std::optional<RandomNumbers> random;     // kRandom
    std::optional<RandomDraw> draw;          // kRandom, once the stream reached it
    std::shared_ptr<OverflowStatus> overflow;  // kReportOverflows, kCopyOverflow, kClearOverflow
    std::optional<DeviceSpan> overflow_dst;    // kCopyOverflow
    std::optional<DeviceSpan> value_address;   // kWaitValue
    uint64_t value = 0;
    uint32_t value_flag = 0;
  };

  Item() = default;
  explicit Item(Kind kind) : kind(kind) {
    if (kind != Kind::kLaunch && kind != Kind::kRecord && kind != Kind::kWait &&
        kind != Kind::kCallback) {
      operands = std::make_unique<Operands>();
    }
  }

  Kind kind = Kind::kCopy;
  uint64_t sequence = 0;
  std::unique_ptr<Operands> operands;
  const SimFunction* function = nullptr;  // kLaunch
  uint32_t block_dim = 0;
  std::shared_ptr<hal::MemoryResolver> memory;
  SimFunction::ArgumentFields fields;  // the argument block, parsed
  uint64_t busy_micros = 0;
  bool busy_done = false;
  std::shared_ptr<SimEvent> event;  // kRecord, kWait
  uint64_t record = 0;              // the record's number (kRecord), the one waited for (kWait)
  bool reached = false;             // kCallback
  bool fail_if_dropped = false;     // kWait
  std::optional<absl::Status> resumed;
  // Piecewise items: the work done so far, in its units (State::Units).
  uint64_t progress = 0;
};

struct SimStream::State : std::enable_shared_from_this<State> {
  // kStopped: an item failed with stop-on-failure set; until Abort().
  enum class Hold { kNone, kBusy, kEvent, kCallback, kStopped, kValue };

  State(const SimDevice& device, Timer& timer, SimDeviceTurns& turns, StreamOptions options)
      : device(device), timer(timer), turns(turns), options(std::move(options)) {}

  absl::StatusOr<uint64_t> Submit(Item item);
  // Runs items until the queue is empty or the head holds. One thread pumps
  // at a time; a thread that finds another pumping leaves the work to it.
  // `borrowed`: the caller is a thread that serves every session and ended a
  // hold (a callback's answer, its timeout) or submitted behind a backlog: it
  // runs no work that moves or computes data (copies, fills, kernels,
  // reductions, random numbers) and at most kBorrowedLooks other items; the
  // device's thread runs the rest. A tenant whose thousands of streams'
  // callbacks time out together must not hold the core's timer for a slice
  // each.
  void Pump(bool borrowed = false);
  static constexpr size_t kBorrowedLooks = 16;
  // How long one thread pumps before it leaves the rest to the device's
  // timer thread: a client can queue a long backlog, and the thread that
  // submits or reaches it (a channel thread) must not run all of it.
  static constexpr absl::Duration kPumpSlice = absl::Microseconds(500);
  // Work whose length the client's sizes decide runs a piece at a time, so
  // that one of gigabytes (seconds) is sliced like a backlog: on a thread
  // that ended a hold it runs for about a slice, and the rest goes to the
  // device's thread between its other streams' events; an Abort waits for
  // one piece at most. A piece is about a millisecond: copies and fills of
  // kPieceBytes (a bulk copy's chunk runs whole), reductions of
  // kReducePieceBytes, kernels of their ElementsPerPiece, random numbers
  // kRandomPieceNumbers at a time.
  static constexpr uint64_t kPieceBytes = kTransferPieceBytes;
  static constexpr uint64_t kReducePieceBytes = uint64_t{1} << 20;
  static constexpr uint64_t kRandomPieceNumbers = uint64_t{1} << 14;  // whole dropout bytes
  static_assert(kRandomPieceNumbers % 8 == 0, "a piece of a dropout bitmask owns its bytes");
  static bool Piecewise(const Item& item) {
    switch (item.kind) {
      case Item::Kind::kCopy:
      case Item::Kind::kFill:
      case Item::Kind::kLaunch:
      case Item::Kind::kReduce:
      case Item::Kind::kRandom:
        return true;
      default:
        return false;
    }
  }
  // A piecewise item's work in its units (bytes, elements, numbers); nullopt
  // for random numbers the stream has not started (their count is read
  // from device memory then).
  static std::optional<uint64_t> Units(const Item& item);
  static uint64_t PieceUnits(const Item& item);
  // Whether more than a piece of `item`, a piecewise one, is left.
  static bool MoreThanAPiece(const Item& item) {
    const std::optional<uint64_t> units = Units(item);
    return !units.has_value() || *units - item.progress > PieceUnits(item);
  }
  // What one piece of the head runs, taken under mu: the head may move in
  // the queue while mu is released, its operands do not.
  struct Piece {
    Item::Kind kind;
    Item::Operands* operands = nullptr;
    // A launch's: its executable outlives the piece (an Abort waits for it).
    const SimFunction* function = nullptr;
    uint32_t block_dim = 0;
    SimFunction::ArgumentFields fields;
    std::shared_ptr<hal::MemoryResolver> memory;
    uint64_t first = 0;
    uint64_t end = 0;
  };
  // Runs [piece.first, piece.end) without mu (a random draw first starts,
  // which sets `end`).
  absl::Status RunPiece(Piece& piece);
  // Runs the next piece of the head, a piecewise item with more than a
  // piece left, and leaves it at the head, unless it failed or ended (a
  // random draw of a piece or less): then it reports it. Releases mu
  // meanwhile.
  void RunPieceLocked(uint64_t held_generation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // What `item` runs with (all of it: first and end are 0).
  static Piece WorkOf(const Item& item);
  // The device bytes `work` may have written, where they are (for the
  // memory watch; a kernel's are every range it may touch). Only while
  // `executing`: a launch's function is its executable's, which an Abort
  // lets go once nothing executes.
  using WrittenBytes = absl::InlinedVector<std::pair<const uint8_t*, uint64_t>, 3>;
  static WrittenBytes WrittenBy(const Piece& work);
  // Tells the memory watch of `written` (after the writer's completion was
  // reported, as on a device).
  void TellWritten(const WrittenBytes& written) const;
  // For the thread that set `executing` to run `item` (off the queue), with
  // mu released: lets go of what it held, ends `executing`, and reports the
  // item, which ran with `status`.
  void Finish(Item& item, const absl::Status& status, uint64_t held_generation)
      ABSL_LOCKS_EXCLUDED(mu);
  // Pump, for the thread that set `pumping`; releases mu.
  void PumpLocked(bool borrowed = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu)
      ABSL_UNLOCK_FUNCTION(mu);
  // Executes `item` (taken off the queue, or never queued) with mu released,
  // then reports it.
  void RunLocked(Item& item, uint64_t held_generation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // An item that runs as soon as the stream reaches it (nothing to wait for).
  static bool RunsAtOnce(const Item& item) {
    switch (item.kind) {
      case Item::Kind::kLaunch:
        return item.busy_micros == 0 && !MoreThanAPiece(item);
      case Item::Kind::kCopy:
      case Item::Kind::kFill:
        return !MoreThanAPiece(item);
      case Item::Kind::kRecord:
        return true;
      default:
        return false;
    }
  }
  absl::Status Execute(Item& item);
  // Runs a task that computes (a kernel, a reduction) in the stream's float
  // environment, and raises the overflow report if a result was out of range.
  template <typename Run>
  absl::Status Compute(Run run);
  // Whether a value wait's value is there (read once, atomically).
  static bool ValueReached(const Item& item) {
    const Item::Operands& wait = *item.operands;
    const auto* word = reinterpret_cast<const uint64_t*>(SimBytes(*wait.value_address));
    return ValueMeets(__atomic_load_n(word, __ATOMIC_ACQUIRE), wait.value, wait.value_flag);
  }
  // Ends a hold of `generation` (stale after an Abort) and pumps.
  void Release(uint64_t held_generation, Hold what);
  // A busy kernel's time is up (on the device's timer, at once): false when
  // the hold of `generation` is stale or ended already. Its Release comes in
  // its owner's turn.
  bool EndBusy(uint64_t held_generation);
  void StopItem(uint64_t sequence, const absl::Status& why);
  void Abort();

  const SimDevice& device;
  Timer& timer;  // the device's: busy kernels' ends
  SimDeviceTurns& turns;  // the device's thread, in the owner's turns
  const StreamOptions options;

  absl::Mutex mu;
  RingQueue<Item> queue ABSL_GUARDED_BY(mu);
  uint64_t next_sequence ABSL_GUARDED_BY(mu) = 1;
  bool pumping ABSL_GUARDED_BY(mu) = false;
  bool executing ABSL_GUARDED_BY(mu) = false;
  Hold hold ABSL_GUARDED_BY(mu) = Hold::kNone;
  // The head's wait in its event's ledger while hold is kEvent.
  uint64_t event_wait ABSL_GUARDED_BY(mu) = 0;
  Timer::TimerId busy_timer ABSL_GUARDED_BY(mu) = 0;
  uint64_t generation ABSL_GUARDED_BY(mu) = 0;
  bool stop_on_failure ABSL_GUARDED_BY(mu) = false;
  // Where overflows go (ReportOverflows). Touched only by Execute, which one
  // pumping thread at a time runs.
  std::shared_ptr<OverflowStatus> overflow_report;
};

template <typename Run>
absl::Status SimStream::State::Compute(Run run) {
  FloatEnvironment environment(options.saturate_floats);
  absl::Status status = run();
  if (environment.overflowed() && overflow_report != nullptr) overflow_report->Raise();
  return status;
}

absl::StatusOr<uint64_t> SimStream::State::Submit(Item item) {
  mu.Lock();
  const uint64_t sequence = item.sequence = next_sequence++;
  if (pumping || !queue.empty() || hold != Hold::kNone || !RunsAtOnce(item)) {
    // Behind other work, the submitting thread (a channel or engine thread
    // that serves every tenant) runs none of that backlog: one request's
    // thousands of submits, each to a stream with a backlog nobody was
    // pumping, held it for a slice each (seconds in all). The device's
    // thread runs it, in its owner's turns.
    const bool behind_others = !queue.empty() || hold != Hold::kNone;
    queue.push_back(std::move(item));
    mu.Unlock();
    Pump(/*borrowed=*/behind_others);
    return sequence;
  }
  // Nothing before it and nothing to wait for: it runs here without a trip
  // through the queue (as every instant kernel launched on an idle stream).
  pumping = true;
  RunLocked(item, generation);
  PumpLocked();
  return sequence;
}

void SimStream::State::Pump(bool borrowed) {
  mu.Lock();
  if (pumping) {
    mu.Unlock();
    return;
  }
  pumping = true;
  PumpLocked(borrowed);
}

void SimStream::State::RunLocked(Item& item, uint64_t held_generation) {
  executing = true;
  mu.Unlock();
  Finish(item, Execute(item), held_generation);
  mu.Lock();
}

void SimStream::State::Finish(Item& item, const absl::Status& status, uint64_t held_generation) {
  const WrittenBytes written =
      device.memory_watch().watched() ? WrittenBy(WorkOf(item)) : WrittenBytes{};
  const uint64_t sequence = item.sequence;
  item = Item{};  // what it held goes back before its completion is reported
  mu.Lock();
  executing = false;
  if (!status.ok() && stop_on_failure && held_generation == generation) hold = Hold::kStopped;
  mu.Unlock();
  options.on_complete(sequence, status);
  // Streams waiting for a value learn of the write only once its own
  // completion is reported, as on a device, where a value wait notices a
  // write after it landed: the writer's synchronization returns first.
  TellWritten(written);
}

void SimStream::State::TellWritten(const WrittenBytes& written) const {
  for (const auto& [bytes, count] : written) device.memory_watch().Written(bytes, count);
}

void SimStream::State::PumpLocked(bool borrowed) {
  std::weak_ptr<State> self = weak_from_this();
  // Read from the first item on: most pumps find nothing to run.
  absl::Time slice_end = absl::InfiniteFuture();
  size_t borrowed_looks = 0;
  while (!queue.empty() && hold == Hold::kNone) {
    if ((slice_end != absl::InfiniteFuture() && absl::Now() >= slice_end) ||
        (borrowed && (Piecewise(queue.front()) || ++borrowed_looks > kBorrowedLooks))) {
      // The rest on the device's thread, a slice at a time in its owner's
      // turns (see kPumpSlice; a borrowed thread leaves it at once, see
      // Pump), each behind the timers due by then (a busy kernel's end).
      turns.Schedule(options.owner, [self] {
        if (auto state = self.lock()) state->Pump();
      });
      break;
    }
    Item& head = queue.front();
    const uint64_t held_generation = generation;
    if (head.kind == Item::Kind::kLaunch && head.busy_micros > 0 && !head.busy_done) {
      hold = Hold::kBusy;
      device.BusyKernelStarted();
      const absl::Duration busy = absl::Microseconds(static_cast<int64_t>(head.busy_micros));
      busy_timer = timer.ScheduleIn(busy, [self, held_generation] {
        std::shared_ptr<State> state = self.lock();
        if (state == nullptr || !state->EndBusy(held_generation)) return;
        // Its time is up now (the device's busy time, a stop coming after
        // it); what follows runs in its owner's turn.
        state->turns.Schedule(state->options.owner, [self, held_generation] {
          if (auto state = self.lock()) state->Release(held_generation, Hold::kBusy);
        });
      });
      break;
    }
    if (head.kind == Item::Kind::kWait) {
      event_wait = head.event->WaitFor(head.record, [self, held_generation] {
        std::shared_ptr<State> state = self.lock();
        if (state == nullptr) return;
        // On the device's thread, in its owner's turn: the completing stream
        // may be mid-item, and two streams releasing each other in turn
        // must not keep one release always ahead of everything else.
        state->turns.Schedule(state->options.owner, [self, held_generation] {
          if (auto state = self.lock()) state->Release(held_generation, Hold::kEvent);
        });
      });
      if (event_wait != 0) {
        hold = Hold::kEvent;
        break;
      }
    }
    if (head.kind == Item::Kind::kWaitValue) {
      // Watch first, then look: a write in between still wakes us (a stale
      // wake-up finds no value hold and does nothing).
      // The watch is the backend's and may outlive this stream: it holds
      // nothing but a weak reference to it.
      device.memory_watch().Watch(this, SimBytes(*head.operands->value_address), [self,
                                                                              held_generation] {
        std::shared_ptr<State> state = self.lock();
        if (state == nullptr) return;
        // Behind the device's timers already due (other streams' busy
        // kernels' ends): thousands of one tenant's waits on one word do
        // not jump ahead of everyone's.
        state->turns.Schedule(state->options.owner, [self, held_generation] {
          if (auto state = self.lock()) state->Release(held_generation, Hold::kValue);
        });
      });
      if (!ValueReached(head)) {
        hold = Hold::kValue;
        break;
      }
      device.memory_watch().Unwatch(this);
    }
    if (head.kind == Item::Kind::kCallback && !head.resumed.has_value()) {
      hold = Hold::kCallback;
      if (head.reached) break;
      head.reached = true;  // from now on ResumeCallbackPoint takes it
      if (!options.on_callback_point) break;
      const uint64_t sequence = head.sequence;
      // Announced while this thread still pumps: a point resumed at once (a
      // callback that does not block) is passed by this loop, not by a pump
      // nested in the listener, which would take a stack frame per point.
      mu.Unlock();
      options.on_callback_point(sequence);
      mu.Lock();
      continue;
    }
    if (slice_end == absl::InfiniteFuture()) slice_end = absl::Now() + kPumpSlice;
    if (Piecewise(head) && MoreThanAPiece(head)) {
      RunPieceLocked(held_generation);
      continue;
    }
    Item item = queue.pop_front();
    RunLocked(item, held_generation);
  }
  pumping = false;
  mu.Unlock();
}

SimStream::State::Piece SimStream::State::WorkOf(const Item& item) {
  Piece work{item.kind, item.operands.get()};
  if (item.kind == Item::Kind::kLaunch) {
    work.function = item.function;
    work.block_dim = item.block_dim;
    work.fields = item.fields;
    work.memory = item.memory;
  }
  return work;
}

SimStream::State::WrittenBytes SimStream::State::WrittenBy(const Piece& work) {
  WrittenBytes written;
  auto add = [&written](const DeviceSpan& span, uint64_t bytes) {
    written.emplace_back(SimBytes(span), bytes);
  };
  const Item::Operands* operands = work.operands;
  switch (work.kind) {
    case Item::Kind::kCopy:
      if (operands->transfer.device_dst.has_value()) {
        add(*operands->transfer.device_dst, operands->transfer.count);
      }
      break;
    case Item::Kind::kFill:
      add(*operands->fill_dst, operands->fill_count);
      break;
    case Item::Kind::kReduce:
      add(operands->reduction.dst, operands->reduction.count);
      break;
    case Item::Kind::kRandom: {
      add(operands->random->result, operands->random->result_room);
      break;
    }
    case Item::Kind::kCopyOverflow:
      add(*operands->overflow_dst, OverflowStatus::kBytes);
      break;
    case Item::Kind::kLaunch: {
      absl::StatusOr<std::vector<DeviceRange>> ranges =
          work.function->kernel().Ranges(work.block_dim, work.fields);
      if (!ranges.ok()) break;
      for (const DeviceRange& range : *ranges) {
        absl::StatusOr<DeviceSpan> span = work.memory->Resolve(range.address, range.bytes);
        if (span.ok()) add(*span, range.bytes);
      }
      break;
    }
    default:
      break;
  }
  return written;
}

std::optional<uint64_t> SimStream::State::Units(const Item& item) {
  switch (item.kind) {
    case Item::Kind::kCopy:
      return item.operands->transfer.count;
    case Item::Kind::kFill:
      return item.operands->fill_count;
    case Item::Kind::kReduce:
      return item.operands->reduction.count;
    case Item::Kind::kLaunch:
      return item.function->kernel().Elements(item.block_dim, item.fields);
    case Item::Kind::kRandom:
      if (!item.operands->draw.has_value()) return std::nullopt;
      return item.operands->draw->count();
    default:
      return 0;
  }
}

uint64_t SimStream::State::PieceUnits(const Item& item) {
  switch (item.kind) {
    case Item::Kind::kReduce:
      return kReducePieceBytes;
    case Item::Kind::kLaunch:
      return item.function->kernel().ElementsPerPiece();
    case Item::Kind::kRandom:
      return kRandomPieceNumbers;
    default:
      return kPieceBytes;
  }
}

void SimStream::State::RunPieceLocked(uint64_t held_generation) {
  const Item& head = queue.front();
  Piece piece = WorkOf(head);
  piece.first = piece.end = head.progress;
  if (const std::optional<uint64_t> units = Units(head); units.has_value()) {
    piece.end += std::min(*units - head.progress, PieceUnits(head));
  }
  executing = true;
  mu.Unlock();
  const absl::Status status = RunPiece(piece);
  mu.Lock();
  if (generation != held_generation) {
    // An Abort dropped the item meanwhile, and waits for this piece: what
    // its pieces wrote still wakes the waits on it.
    mu.Unlock();
    const WrittenBytes written =
        device.memory_watch().watched() ? WrittenBy(piece) : WrittenBytes{};
    piece = Piece{};  // what it held goes back without the lock
    mu.Lock();
    executing = false;
    mu.Unlock();
    TellWritten(written);
    mu.Lock();
    return;
  }
  Item& now = queue.front();
  now.progress = piece.end;
  if (status.ok() && *Units(now) > now.progress) {
    executing = false;
    return;
  }
  Item ended = queue.pop_front();
  mu.Unlock();
  Finish(ended, status, held_generation);
  mu.Lock();
}

absl::Status SimStream::State::RunPiece(Piece& piece) {
  Item::Operands* operands = piece.operands;
  const uint64_t first = piece.first;
  switch (piece.kind) {
    case Item::Kind::kCopy:
      SimTransfer(PartOf(operands->transfer, first, piece.end - first));
      return absl::OkStatus();
    case Item::Kind::kFill:
      std::memset(SimBytes(Advanced(*operands->fill_dst, first)), operands->fill_value,
                  piece.end - first);
      return absl::OkStatus();
    case Item::Kind::kLaunch: {
      SpanBytes memory(*piece.memory);
      return Compute([&] {
        return KernelStatus(piece.function->name(),
                            piece.function->kernel().RunElements(piece.block_dim, piece.fields,
                                                                 memory, first, piece.end));
      });
    }
    case Item::Kind::kReduce:
      return Compute([&] {
        const Reduction& r = operands->reduction;
        ReduceBytes(SimBytes(Advanced(r.dst, first)), SimBytes(Advanced(r.src, first)),
                    piece.end - first, r.kind, r.data_type);
        return absl::OkStatus();
      });
    case Item::Kind::kRandom: {
      if (!operands->draw.has_value()) {
        absl::StatusOr<RandomDraw> draw = RandomDraw::Start(*operands->random);
        if (!draw.ok()) return draw.status();
        operands->draw = *std::move(draw);
        piece.end = std::min(operands->draw->count(), first + kRandomPieceNumbers);
      }
      operands->draw->Generate(first, piece.end);
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

absl::Status SimStream::State::Execute(Item& item) {
  // What is left of a piecewise item, a piece or less (all of a small copy,
  // fill or reduction; the rest of one that ran in pieces).
  const bool started = item.progress > 0;
  if (item.kind == Item::Kind::kCopy || item.kind == Item::Kind::kFill ||
      item.kind == Item::Kind::kReduce || (started && Piecewise(item))) {
    Piece rest = WorkOf(item);
    rest.first = item.progress;
    rest.end = *Units(item);
    return RunPiece(rest);
  }
  switch (item.kind) {
    case Item::Kind::kLaunch: {
      SpanBytes memory(*item.memory);
      std::string printed;
      absl::Status status = Compute([&] {
        return KernelStatus(item.function->name(),
                            item.function->kernel().RunAndPrint(item.block_dim, item.fields, memory,
                                                                printed));
      });
      if (!printed.empty() && options.on_output) options.on_output(item.sequence, std::move(printed));
      return status;
    }
    case Item::Kind::kRandom:
      return GenerateRandomNumbers(*item.operands->random);
    case Item::Kind::kReportOverflows:
      overflow_report = std::move(item.operands->overflow);
      return absl::OkStatus();
    case Item::Kind::kCopyOverflow: {
      uint8_t* dst = SimBytes(*item.operands->overflow_dst);
      std::memset(dst, 0, OverflowStatus::kBytes);
      const uint32_t flag = item.operands->overflow->flag();
      std::memcpy(dst, &flag, sizeof(flag));  // little-endian, as the device's
      return absl::OkStatus();
    }
    case Item::Kind::kClearOverflow:
      item.operands->overflow->Clear();
      return absl::OkStatus();
    case Item::Kind::kWaitValue:
      return absl::OkStatus();  // the value was there when the stream reached it
    case Item::Kind::kRecord:
      item.event->CompleteRecord(item.record, device.NowNanos());
      return absl::OkStatus();
    case Item::Kind::kWait:
      // Settled when the stream got here: read now, after the settling.
      if (item.fail_if_dropped && item.event->Dropped(item.record)) return DroppedRecord();
      return absl::OkStatus();
    case Item::Kind::kCallback:
      return *item.resumed;
  }
  return absl::OkStatus();
}

void SimStream::State::Release(uint64_t held_generation, Hold what) {
  {
    absl::MutexLock lock(&mu);
    if (held_generation != generation || hold != what || queue.empty()) return;
    hold = Hold::kNone;
  }
  Pump();
}

bool SimStream::State::EndBusy(uint64_t held_generation) {
  absl::MutexLock lock(&mu);
  if (held_generation != generation || hold != Hold::kBusy || queue.empty() || busy_timer == 0) {
    return false;
  }
  queue.front().busy_done = true;
  busy_timer = 0;
  device.BusyKernelEnded();
  return true;
}

void SimStream::State::StopItem(uint64_t sequence, const absl::Status& why) {
  Item stopped;  // destroyed unlocked, before its failure is reported: it holds memory
  bool pump;
  {
    absl::MutexLock lock(&mu);
    // Only a held head is executing for long: a busy kernel, or a wait. An
    // instant item finishes as it starts (a copy or fill in pieces runs to
    // its end); a host-callback point runs on the host, where nothing can
    // stop it.
    if (queue.empty() || queue.front().sequence != sequence ||
        (hold != Hold::kBusy && hold != Hold::kEvent && hold != Hold::kValue) ||
        (hold == Hold::kBusy && queue.front().busy_done)) {  // its time was up: it ran
      return;
    }
    if (hold == Hold::kBusy) {
      timer.Cancel(busy_timer);
      busy_timer = 0;
      device.BusyKernelEnded();
    }
    if (hold == Hold::kValue) device.memory_watch().Unwatch(this);
    if (hold == Hold::kEvent) queue.front().event->CancelWait(event_wait);
    // A release of the hold already under way finds it stale.
    ++generation;
    stopped = queue.pop_front();
    hold = stop_on_failure ? Hold::kStopped : Hold::kNone;
    // Pumps for the stream until the stop is reported: a stream turned to
    // CONTINUE meanwhile (SetStopOnFailure) must not run what the core,
    // still under STOP when it hears of the stop, discards.
    pump = !pumping;
    pumping = true;
  }
  stopped = Item{};
  options.on_complete(sequence, why);
  if (!pump) return;  // the thread pumping goes on
  mu.Lock();
  // On the thread of the client's call, which serves every session.
  PumpLocked(/*borrowed=*/true);
}

void SimStream::State::Abort() {
  RingQueue<Item> dropped;  // destroyed unlocked: it holds memory and events
  {
    absl::MutexLock lock(&mu);
    ++generation;
    // A wait dropped here is forgotten by its event at once: its record may
    // never settle (a client aborting such waits in a loop would pile them up).
    if (hold == Hold::kEvent && !queue.empty()) queue.front().event->CancelWait(event_wait);
    std::swap(dropped, queue);
    if (busy_timer != 0) {
      timer.Cancel(busy_timer);
      device.BusyKernelEnded();
    }
    busy_timer = 0;
    if (hold == Hold::kValue) device.memory_watch().Unwatch(this);
    hold = Hold::kNone;
    // An item running on another thread finishes first: the caller may free
    // what it touches once we return.
    mu.Await(absl::Condition(
        +[](State* state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) { return !state->executing; },
        this));
  }
  // A head dropped part-way wrote some of its bytes: they still wake the
  // waits on them (nothing else will tell the watch).
  if (!dropped.empty() && dropped.front().progress > 0 && device.memory_watch().watched()) {
    TellWritten(WrittenBy(WorkOf(dropped.front())));
  }
  // Streams waiting on a dropped record must not wait for it forever.
  while (!dropped.empty()) {
    Item item = dropped.pop_front();
    if (item.kind == Item::Kind::kRecord) item.event->CompleteRecord(item.record, std::nullopt);
  }
}

SimStream::SimStream(const SimDevice& device, Timer& device_timer, SimDeviceTurns& turns,
                     StreamOptions options, std::shared_ptr<void> device_slot)
    : state_(std::make_shared<State>(device, device_timer, turns, std::move(options))),
      device_slot_(std::move(device_slot)) {}

SimStream::~SimStream() { state_->Abort(); }

absl::StatusOr<uint64_t> SimStream::Copy(const Transfer& transfer) {
  const bool one_src = transfer.device_src.has_value() != (transfer.host_src != nullptr);
  const bool one_dst = transfer.device_dst.has_value() != (transfer.host_dst != nullptr);
  if (!one_src || !one_dst) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM, "a copy needs one source and one destination");
  }
  Item item(Item::Kind::kCopy);
  item.operands->transfer = transfer;
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::Fill(const DeviceSpan& dst, uint8_t value, uint64_t count) {
  Item item(Item::Kind::kFill);
  item.operands->fill_dst = dst;
  item.operands->fill_value = value;
  item.operands->fill_count = count;
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::WaitValue(const DeviceSpan& address, uint64_t value,
                                              uint32_t flag) {
  if (flag > ACL_STREAM_WAIT_VALUE_NOR) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat("value wait flag ", flag, " is not ACL_STREAM_WAIT_VALUE_*"));
  }
  if (reinterpret_cast<uintptr_t>(SimBytes(address)) % 8 != 0) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM, "a value wait's address must be 8-byte aligned");
  }
  Item item(Item::Kind::kWaitValue);
  item.operands->value_address = address;
  item.operands->value = value;
  item.operands->value_flag = flag;
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::Reduce(const Reduction& reduction) {
  ACL_RETURN_IF_ERROR(CheckReduction(reduction.kind, reduction.data_type, reduction.count));
  Item item(Item::Kind::kReduce);
  item.operands->reduction = reduction;
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::GenerateRandom(const RandomNumbers& task) {
  ACL_RETURN_IF_ERROR(CheckRandomNumbers(task));
  Item item(Item::Kind::kRandom);
  item.operands->random = task;
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::ReportOverflows(std::shared_ptr<OverflowStatus> status) {
  Item item(Item::Kind::kReportOverflows);
  item.operands->overflow = std::move(status);
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::CopyOverflowStatus(const DeviceSpan& dst,
                                                       std::shared_ptr<OverflowStatus> status) {
  if (status == nullptr) return acld::AclStatus(ACL_ERROR_INVALID_PARAM, "no overflow status");
  Item item(Item::Kind::kCopyOverflow);
  item.operands->overflow = std::move(status);
  item.operands->overflow_dst = dst;
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::ClearOverflowStatus(std::shared_ptr<OverflowStatus> status) {
  if (status == nullptr) return acld::AclStatus(ACL_ERROR_INVALID_PARAM, "no overflow status");
  Item item(Item::Kind::kClearOverflow);
  item.operands->overflow = std::move(status);
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::Launch(const Function& function, const LaunchParams& params) {
  const auto* sim_function = dynamic_cast<const SimFunction*>(&function);
  if (sim_function == nullptr) return NotOfThisDevice("function");
  if (params.memory == nullptr) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           "a sim kernel launch needs its checked device memory");
  }
  absl::StatusOr<SimFunction::ArgumentFields> fields = sim_function->Fields(params.args);
  if (!fields.ok()) return fields.status();
  Item item(Item::Kind::kLaunch);
  item.function = sim_function;
  item.busy_micros = BusyMicrosOf(sim_function->kernel().BusyMicros(*fields), params.block_dim,
                                  params.core_limits);
  item.fields = *std::move(fields);
  item.block_dim = params.block_dim;
  item.memory = params.memory;
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::RecordEvent(Event& event, uint64_t record) {
  auto* sim_event = dynamic_cast<SimEvent*>(&event);
  if (sim_event == nullptr) return NotOfThisDevice("event");
  Item item(Item::Kind::kRecord);
  item.event = sim_event->shared_from_this();
  item.record = record;
  sim_event->AddRecord(record);
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::WaitEvent(Event& event, uint64_t record,
                                             bool fail_if_dropped) {
  auto* sim_event = dynamic_cast<SimEvent*>(&event);
  if (sim_event == nullptr) return NotOfThisDevice("event");
  Item item(Item::Kind::kWait);
  item.event = sim_event->shared_from_this();
  item.record = record;
  item.fail_if_dropped = fail_if_dropped;
  return state_->Submit(std::move(item));
}

absl::StatusOr<uint64_t> SimStream::HostCallbackPoint() {
  Item item(Item::Kind::kCallback);
  return state_->Submit(std::move(item));
}

void SimStream::ResumeCallbackPoint(uint64_t sequence, absl::Status status) {
  {
    absl::MutexLock lock(&state_->mu);
    if (state_->queue.empty()) return;
    Item& head = state_->queue.front();
    if (head.kind != Item::Kind::kCallback || head.sequence != sequence || !head.reached ||
        head.resumed.has_value()) {
      return;
    }
    head.resumed = std::move(status);
    state_->hold = State::Hold::kNone;
  }
  // On the thread that passed the answer on (a channel thread, the core's
  // timer for a timeout), which serves every session.
  state_->Pump(/*borrowed=*/true);
}

absl::Status SimStream::SetStopOnFailure(bool stop) {
  {
    absl::MutexLock lock(&state_->mu);
    state_->stop_on_failure = stop;
    // Stopped for a failure the core may not have heard of yet: it will
    // hear of it under CONTINUE, and abort nothing (hal/stream.h).
    if (stop || state_->hold != State::Hold::kStopped) return absl::OkStatus();
    state_->hold = State::Hold::kNone;
  }
  // On the thread of the client's call, which serves every session.
  state_->Pump(/*borrowed=*/true);
  return absl::OkStatus();
}

absl::Status SimStream::StopItem(uint64_t sequence, const absl::Status& why) {
  state_->StopItem(sequence, why);
  return absl::OkStatus();
}

void SimStream::Abort() { state_->Abort(); }

}  // namespace hal::sim
