#include "dist/shm_transport.h"

#include <sys/statvfs.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <new>

#include "base/check.h"
#include "dist/reduce_kernel.h"

namespace rt {

// One direction of a ring link. Pieces are numbered from 0; piece i sits in slot i % slots.
// The writer may fill piece i once i - consumed < slots; the reader may take it once written > i.
// Release stores and acquire loads on the counters order the slot contents around them.
struct ShmTransport::Inbox {
  alignas(64) std::atomic<uint64_t> written{0};   // pieces the predecessor has written
  alignas(64) std::atomic<uint64_t> consumed{0};  // pieces this rank has copied out
  struct Piece {
    uint64_t bytes;      // its length, to catch mismatched transfers
    uint64_t offset;     // where in its slot it starts (Note [4K aliasing]), or in the sender's region
    uint64_t in_region;  // 1: the bytes stay in the sender's region (Note [Zero-copy pieces])
  };
  alignas(64) Piece pieces[64] = {};  // by slot
  // What this rank is blocked on right now (-1: nothing), read by stalled ranks to follow a chain
  // of waits to the rank at its end; the heartbeat (steady clock, ns) moves on while it waits, so
  // a rank frozen or killed inside a wait is told from one that is still waiting.
  std::atomic<int> waiting_for{-1};
  std::atomic<int64_t> heartbeat_ns{0};
  std::atomic<int> waiting_elsewhere{-1};  // a world rank this rank waits on outside the ring
};

namespace {
constexpr size_t kPage = 4096;
constexpr size_t kHeaderBytes = 4096;  // Inbox, padded so the slots start page-aligned

void* page_aligned(void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<void*>((a + kPage - 1) / kPage * kPage);
}
constexpr int64_t kStaleHeartbeatNs = 1'000'000'000;  // a waiting rank beats every ~20 us

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint64_t>::is_always_lock_free,
              "the inbox counters must be lock-free to work across processes");

// MPI_Win_free is collective: while an exception unwinds on this rank alone, the others never
// join it, so the window is left to the end of the process (Note [Fatal errors under MPI]).
bool unwinding() { return std::uncaught_exceptions() > 0; }

// Collective over comm: the ranks of comm that share this host's memory, as *node (in comm's
// order); returns how many of comm's ranks that is.
int split_by_host(MPI_Comm comm, MPI_Comm* node) {
  int rank = 0, node_size = 0;
  MPI_Comm_rank(comm, &rank);
  RT_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, node) == MPI_SUCCESS,
           "MPI_Comm_split_type failed");
  MPI_Comm_size(*node, &node_size);
  return node_size;
}

// Collective over comm: a shared window of `bytes` per rank, as *win, and every rank's part as
// mapped here, each at a page boundary. Open MPI's parts need not start on a page (here they
// start 264 bytes past one), so each rank allocates a page more; every process maps the segment
// at a page boundary, so the offset to the page is the same everywhere.
std::vector<char*> allocate_shared_pages(MPI_Comm comm, size_t bytes, MPI_Win* win, const char* what) {
  const size_t padded = bytes + kPage;
  void* base = nullptr;
  RT_CHECK(MPI_Win_allocate_shared(static_cast<MPI_Aint>(padded), 1, MPI_INFO_NULL, comm, &base, win) == MPI_SUCCESS,
           "MPI_Win_allocate_shared of ", padded, " bytes for ", what, " failed");
  int world = 0;
  MPI_Comm_size(comm, &world);
  std::vector<char*> parts;
  for (int r = 0; r < world; ++r) {
    MPI_Aint size = 0;
    int unit = 0;
    void* part = nullptr;
    MPI_Win_shared_query(*win, r, &size, &unit, &part);
    parts.push_back(static_cast<char*>(page_aligned(part)));
  }
  return parts;
}
}  // namespace

ShmTransport::Space ShmTransport::check_space(MPI_Comm comm, size_t region_floats) {
  int ranks = 0;
  MPI_Comm_size(comm, &ranks);
  // Each rank's part of each window is padded by a page (allocate_shared_pages); the region by one
  // more (allocate); and a MiB to spare for MPI's own bookkeeping in the same folder.
  const uint64_t inboxes = kHeaderBytes + (kSlotBytes + 4096) * static_cast<uint64_t>(kSlots) + kPage;
  const uint64_t region = region_floats == 0 ? 0 : region_floats * sizeof(float) + 2 * kPage;
  Space space;
  space.needed = static_cast<uint64_t>(ranks) * (inboxes + region) + (uint64_t{1} << 20);
  struct statvfs fs {};
  double available = statvfs("/dev/shm", &fs) == 0 ? static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize)
                                                   : -1;  // no /dev/shm: MPI keeps its windows elsewhere
  int fits = available < 0 || available >= static_cast<double>(space.needed) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &fits, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, &available, 1, MPI_DOUBLE, MPI_MIN, comm);
  space.fits = fits == 1;
  space.available = available < 0 ? 0 : static_cast<uint64_t>(available);
  return space;
}

std::string ShmTransport::Space::shortfall() const {
  const auto mib = [](uint64_t bytes) { return str_cat((bytes + (uint64_t{1} << 20) - 1) >> 20, " MiB"); };
  return str_cat("/dev/shm has ", mib(available), " (", available, " bytes) free but the shared-memory ring needs ",
                 mib(needed), " (", needed,
                 " bytes) for its windows on this host. Give the job a larger /dev/shm "
                 "(docker run --shm-size=",
                 (2 * needed >> 20) + 1,
                 "m; in Kubernetes an emptyDir volume with "
                 "medium: Memory mounted at /dev/shm: docs/launch.md)");
}

bool ShmTransport::available(MPI_Comm comm) {
  MPI_Comm node;
  int size = 0;
  MPI_Comm_size(comm, &size);
  const int node_size = split_by_host(comm, &node);
  MPI_Comm_free(&node);
  int all = node_size == size ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

// Note [Zero-copy pieces]: a send from the region allocate() handed out (the gradient arena) puts
// only the piece's place in the slot; the successor adds or copies it straight out of the
// sender's memory, so a reduce-scatter step costs one pass over the data instead of three (copy
// into the slot, then add out of it), and an all-gather step one instead of two. The send is
// done only when the successor has consumed the piece (the consumed counter passes it): until
// then the sender must not touch those bytes, which is what waiting for a send means anyway.
// Each rank's region starts at its own page offset (0, 2048 or 1024 bytes), so that a receiver's
// source and destination never agree in their low 12 bits (Note [4K aliasing]).
struct ShmTransport::Region {
  MPI_Win win = MPI_WIN_NULL;
  std::vector<char*> base;  // every rank's region, as mapped here
  size_t bytes = 0;
  ~Region() {
    if (win != MPI_WIN_NULL && !unwinding()) MPI_Win_free(&win);
  }
  bool holds(const char* p, size_t n, int rank) const {
    const char* b = base[static_cast<size_t>(rank)];
    return p >= b && p + n <= b + bytes;
  }
};

namespace {
// Ring neighbours get page offsets at least 1024 bytes apart, odd world sizes included.
size_t region_page_offset(int rank, int world) {
  if (world % 2 == 1 && rank == world - 1) return 1024;
  return rank % 2 == 0 ? 0 : 2048;
}
}  // namespace

std::shared_ptr<float> ShmTransport::allocate(size_t floats) {
  RT_CHECK(region_ == nullptr, "shared-memory transport: allocate() hands out one region per transport");
  auto region = std::make_shared<Region>();
  region->bytes = floats * sizeof(float);
  // A page more, to shift the region within its page.
  region->base = allocate_shared_pages(comm_, region->bytes + kPage, &region->win, "the gradient region");
  for (int r = 0; r < world_; ++r) region->base[static_cast<size_t>(r)] += region_page_offset(r, world_);
  char* mine = region->base[static_cast<size_t>(rank_)];
  std::memset(mine, 0, region->bytes);
  region_ = region;
  // The caller's pointer keeps the window alive as long as the transport's does.
  return std::shared_ptr<float>(region, reinterpret_cast<float*>(mine));
}

ShmTransport::ShmTransport(MPI_Comm comm, StallPolicy policy, size_t slot_bytes, int slots)
    : policy_(std::move(policy)), slot_bytes_(slot_bytes), slots_(slots) {
  static_assert(sizeof(Inbox) <= kHeaderBytes);
  // Slots hold whole floats, so a reducing receive never splits one across two pieces.
  RT_CHECK(slots >= 1 && slots <= 64 && slot_bytes % 64 == 0, "shared-memory transport: bad slot geometry");
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &world_);
  const int node_size = split_by_host(comm, &comm_);
  RT_CHECK(node_size == world_, "the shared-memory transport needs every rank on one host; this host has ", node_size,
           " of ", world_, " ranks (use dist.transport = \"mpi\")");
  next_ = (rank_ + 1) % world_;
  prev_ = (rank_ + world_ - 1) % world_;
  const std::vector<char*> bases =
      allocate_shared_pages(comm_, kHeaderBytes + slot_stride() * static_cast<size_t>(slots_), &win_, "the inboxes");
  mine_ = new (bases[static_cast<size_t>(rank_)]) Inbox();
  for (char* b : bases) inboxes_.push_back(reinterpret_cast<Inbox*>(b));
  next_inbox_ = inboxes_[static_cast<size_t>(next_)];
  MPI_Barrier(comm_);  // every inbox is constructed before anyone writes to one
}

ShmTransport::~ShmTransport() {
  if (win_ != MPI_WIN_NULL && !unwinding()) MPI_Win_free(&win_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

size_t ShmTransport::slot_index(uint64_t piece) const {
  return static_cast<size_t>(piece % static_cast<uint64_t>(slots_));
}

char* ShmTransport::slot(Inbox* box, uint64_t piece) const {
  return reinterpret_cast<char*>(box) + kHeaderBytes + slot_stride() * slot_index(piece);
}

void ShmTransport::advance(std::deque<Transfer>& queue, size_t n) {
  Transfer& t = queue.front();
  t.done += n;
  if (t.done == t.bytes) {
    done_[static_cast<size_t>(t.handle)] = true;
    queue.pop_front();
  }
}

// Note [Slot copies]: the sender writes each piece with non-temporal stores (stream_copy), so
// the receiver reads it from memory instead of snooping freshly written lines out of the
// sender's cache. On the development VM the snooping path was fast in most launches and 4-5x
// slower in about a third of them, for a whole run and in every window alike (most likely when
// the two vCPUs sat on far-apart host cores); with streaming stores every launch measured alike.
//
// Note [4K aliasing]: a copy or sum whose source and destination addresses agree in their low 12
// bits up to a few hundred bytes (say the slot at a page boundary and the data 16 bytes past one)
// makes every load wait on an unrelated earlier store: measured here, 4x slower transfers. So a
// piece starts in its slot half a page away from its source. Ranks lay out their buffers alike,
// so the receiver's destination has the source's page offset too and is equally far away.
uint64_t ShmTransport::slot_offset(const char* source, const char* slot_begin) {
  const uintptr_t want = (reinterpret_cast<uintptr_t>(source) + kPage / 2) % kPage;
  return static_cast<uint64_t>((want + kPage - reinterpret_cast<uintptr_t>(slot_begin) % kPage) % kPage);
}

Transport::Handle ShmTransport::post_send(const void* data, size_t bytes, int peer) {
  RT_CHECK(peer == next_, "shared-memory transport: rank ", rank_, " can send only to its ring successor ", next_,
           ", not ", peer);
  const Handle h = static_cast<Handle>(done_.size());
  done_.push_back(bytes == 0);
  is_send_.push_back(true);
  char* p = static_cast<char*>(const_cast<void*>(data));
  if (bytes > 0) sends_.push_back({p, bytes, 0, h, false, 1, region_ && region_->holds(p, bytes, rank_)});
  progress();
  return h;
}

Transport::Handle ShmTransport::post_recv(void* data, size_t bytes, int peer) {
  return enqueue_recv({static_cast<char*>(data), bytes, 0, 0, false, 1}, peer);
}

Transport::Handle ShmTransport::post_recv_reduce(float* dst, size_t count, int peer, float scale) {
  return enqueue_recv({reinterpret_cast<char*>(dst), count * sizeof(float), 0, 0, true, scale}, peer);
}

Transport::Handle ShmTransport::enqueue_recv(Transfer t, int peer) {
  RT_CHECK(peer == prev_, "shared-memory transport: rank ", rank_, " can receive only from its ring predecessor ",
           prev_, ", not ", peer);
  t.handle = static_cast<Handle>(done_.size());
  done_.push_back(t.bytes == 0);
  is_send_.push_back(false);
  if (t.bytes > 0) recvs_.push_back(t);
  progress();
  return t.handle;
}

// Moves as many pieces as the inboxes allow, in posting order: sends into the successor's free
// slots, receives out of this rank's filled ones.
bool ShmTransport::progress() {
  const bool sent = send_pieces();
  const bool received = receive_pieces();
  return collect_acks() || sent || received;
}

bool ShmTransport::send_pieces() {
  bool moved = false;
  while (!sends_.empty() &&
         sent_pieces_ - next_inbox_->consumed.load(std::memory_order_acquire) < static_cast<uint64_t>(slots_)) {
    const Transfer& t = sends_.front();
    Inbox::Piece& piece = next_inbox_->pieces[slot_index(sent_pieces_)];
    moved = true;
    if (t.in_region) {  // Note [Zero-copy pieces]
      piece = {t.bytes, static_cast<uint64_t>(t.data - region_->base[static_cast<size_t>(rank_)]), 1};
      next_inbox_->written.store(++sent_pieces_, std::memory_order_release);
      unacked_.push_back({sent_pieces_, t.handle});
      sends_.pop_front();
      continue;
    }
    const size_t n = std::min(slot_bytes_, t.bytes - t.done);
    char* slot_begin = slot(next_inbox_, sent_pieces_);
    const uint64_t offset = slot_offset(t.data + t.done, slot_begin);
    stream_copy(slot_begin + offset, t.data + t.done, n);
    piece = {n, offset, 0};
    next_inbox_->written.store(++sent_pieces_, std::memory_order_release);
    advance(sends_, n);
  }
  return moved;
}

bool ShmTransport::receive_pieces() {
  bool moved = false;
  while (!recvs_.empty() && mine_->written.load(std::memory_order_acquire) > received_pieces_) {
    const Transfer& t = recvs_.front();
    const Inbox::Piece sent = mine_->pieces[slot_index(received_pieces_)];
    // A piece from the sender's region is the rest of the transfer in one; a copied one fills
    // at most a slot.
    const size_t n = sent.in_region ? t.bytes - t.done : std::min(slot_bytes_, t.bytes - t.done);
    RT_CHECK(sent.bytes == n, "shared-memory transport: rank ", policy_.world_rank(rank_), " expected a piece of ", n,
             " bytes from rank ", policy_.world_rank(prev_), policy_.ring, " but got ", sent.bytes,
             " (the ranks run different schedules)");
    const char* piece = sent.in_region ? region_->base[static_cast<size_t>(prev_)] + sent.offset
                                       : slot(mine_, received_pieces_) + sent.offset;
    if (t.reduce) {
      add_into(reinterpret_cast<float*>(t.data + t.done), reinterpret_cast<const float*>(piece), n / sizeof(float),
               t.scale);
    } else {
      std::memcpy(t.data + t.done, piece, n);
    }
    mine_->consumed.store(++received_pieces_, std::memory_order_release);
    advance(recvs_, n);
    moved = true;
  }
  return moved;
}

// Completes the zero-copy sends whose pieces the successor has consumed.
bool ShmTransport::collect_acks() {
  bool any = false;
  const uint64_t consumed = next_inbox_->consumed.load(std::memory_order_acquire);
  while (!unacked_.empty() && unacked_.front().piece <= consumed) {
    done_[static_cast<size_t>(unacked_.front().handle)] = true;
    unacked_.pop_front();
    any = true;
  }
  return any;
}

void ShmTransport::wait(Handle h, const WaitContext& ctx) {
  const size_t i = static_cast<size_t>(h);
  RT_ASSERT(i < done_.size());
  const int peer = is_send_[i] ? next_ : prev_;
  progress();
  if (done_[i]) return;
  mine_->heartbeat_ns.store(steady_ns(), std::memory_order_relaxed);
  mine_->waiting_for.store(peer, std::memory_order_relaxed);
  wait_until(
      [&, polls = 0]() mutable {
        const bool moved = progress();
        // Reading the clock on every poll cost 9% of a transfer's time; every 64th is plenty.
        if ((++polls & 63) == 0) mine_->heartbeat_ns.store(steady_ns(), std::memory_order_relaxed);
        return done_[i] ? PollResult::kDone : moved ? PollResult::kMoved : PollResult::kIdle;
      },
      policy_,
      [&](double waited) { return stall_report(ctx, is_send_[i], policy_.world_rank(peer), waited) + policy_.ring; },
      [&] { return blame_chain(peer); });
  mine_->waiting_for.store(-1, std::memory_order_relaxed);
}

// Follows "rank a waits for rank b" through the other ranks' inboxes: the rank at the end of the
// chain, which waits for no one, is the one at fault; a chain that returns here means every rank
// waits on another (different schedules, or a lost message).
std::string ShmTransport::blame_chain(int peer) const {
  std::string chain;
  int at = peer;
  for (int hops = 0; hops < world_; ++hops) {
    const Inbox* box = inboxes_[static_cast<size_t>(at)];
    const int next = box->waiting_for.load(std::memory_order_relaxed);
    const int elsewhere = box->waiting_elsewhere.load(std::memory_order_relaxed);
    if (next < 0 && elsewhere >= 0)
      return chain +
             str_cat("; rank ", policy_.world_rank(at), " is itself waiting for rank ", elsewhere, " across hosts") +
             blame_rank(policy_, elsewhere);
    const bool frozen = steady_ns() - box->heartbeat_ns.load(std::memory_order_relaxed) > kStaleHeartbeatNs;
    if (next < 0 || frozen) return chain + blame_rank(policy_, policy_.world_rank(at));
    if (next == rank_)
      return chain + str_cat("; rank ", policy_.world_rank(at),
                             " waits for this rank: every rank in the ring is waiting "
                             "on another, so the ranks run different schedules");
    chain += str_cat("; rank ", policy_.world_rank(at), " is itself waiting for rank ", policy_.world_rank(next));
    at = next;
  }
  return chain + blame_rank(policy_, policy_.world_rank(at));
}

void ShmTransport::waiting_elsewhere(int world_rank) {
  mine_->waiting_elsewhere.store(world_rank, std::memory_order_relaxed);
}

void ShmTransport::reset() {
  RT_ASSERT(sends_.empty() && recvs_.empty() && unacked_.empty());
  done_.clear();
  is_send_.clear();
}

}  // namespace rt
