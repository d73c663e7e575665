// Transport over shared memory for rings whose ranks all live on one host. Each rank owns an
// inbox in an MPI shared-memory window (MPI_Win_allocate_shared): a FIFO of fixed-size slots that
// only its ring predecessor writes. A send is copied into the successor's inbox slot by slot; a
// receive is copied (or added) out of the own inbox; two counters (pieces written, pieces
// consumed) are the only synchronisation. Buffers inside the region allocate() hands out (the
// gradient arena) are not copied at all: the slot carries only where the piece lies, and the
// successor reads it in place (Note [Zero-copy pieces]). Transfers progress inside wait(), in
// posting order per direction, so a full inbox never blocks a rank from draining its own. Against
// Open MPI's shared-memory path this skips message matching and small fragments: see
// docs/results/2026-11-22-allreduce-bandwidth.md.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "dist/stall_wait.h"
#include "dist/transport.h"

namespace rt {

class ShmTransport final : public Transport {
 public:
  // Collective over comm. Only ring neighbours may be peers: sends go to (rank + 1) % world,
  // receives come from (rank - 1 + world) % world.
  static constexpr size_t kSlotBytes = size_t{128} << 10;
  static constexpr int kSlots = 16;
  ShmTransport(MPI_Comm comm, StallPolicy policy, size_t slot_bytes = kSlotBytes, int slots = kSlots);
  ~ShmTransport() override;
  // Collective over comm: true when every rank of comm shares this host's memory.
  static bool available(MPI_Comm comm);
  // Collective over comm, every rank on this host: whether /dev/shm, where MPI keeps shared
  // windows, has room for every rank's windows with allocate(region_floats); the ranks agree. A
  // window larger than the space left is not refused by MPI: its pages fail when first touched
  // (SIGBUS under MPICH, a hang under Open MPI), so the space is checked before.
  struct Space {
    bool fits = true;
    uint64_t needed = 0, available = 0;  // bytes on this host; available: the least any rank saw
    std::string shortfall() const;       // "/dev/shm has 64 MiB free, the shared-memory ring needs 180 MiB ..."
  };
  static Space check_space(MPI_Comm comm, size_t region_floats);

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  // Memory in a second shared window that both ring neighbours map: sends from it and receives
  // of pieces sent from it move no bytes through the inboxes. One such region per transport.
  std::shared_ptr<float> allocate(size_t floats) override;
  Handle post_send(const void* data, size_t bytes, int peer) override;
  Handle post_recv(void* data, size_t bytes, int peer) override;
  // Adds each piece into dst straight out of the inbox slot: no staging copy.
  Handle post_recv_reduce(float* dst, size_t count, int peer, float scale) override;
  void wait(Handle handle, const WaitContext& context) override;
  void reset() override;
  // This rank now waits on world rank `world_rank` outside this ring (the two-level ring's ring
  // across hosts; -1: no longer), so that a rank of this host stalled on it names that rank.
  void waiting_elsewhere(int world_rank);

 private:
  struct Inbox;   // the shared header: counters and piece sizes, then the slots
  struct Region;  // the window allocate() hands out, and where every rank maps it
  struct Transfer {
    char* data;
    size_t bytes, done;
    Handle handle;
    bool reduce = false;  // receive: add the floats into data instead of copying
    float scale = 1;
    bool in_region = false;  // send: data lies in the region; the successor reads it in place
  };
  struct Unacked {  // a zero-copy send, done once the successor has consumed its piece
    uint64_t piece;
    Handle handle;
  };
  bool progress();  // true when it moved a piece or completed a transfer
  bool send_pieces();
  bool receive_pieces();
  bool collect_acks();
  Handle enqueue_recv(Transfer t, int peer);
  std::string blame_chain(int peer) const;
  size_t slot_index(uint64_t piece) const;
  char* slot(Inbox* box, uint64_t piece) const;
  // Counts n more bytes of the queue's front transfer as moved, and completes it when all are.
  void advance(std::deque<Transfer>& queue, size_t n);
  size_t slot_stride() const { return slot_bytes_ + 4096; }  // a piece and up to a page of offset
  static uint64_t slot_offset(const char* source, const char* slot_begin);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  int rank_ = 0, world_ = 1, next_ = 0, prev_ = 0;
  StallPolicy policy_;
  size_t slot_bytes_;
  int slots_;
  std::vector<Inbox*> inboxes_;  // every rank's, by rank
  Inbox* mine_ = nullptr;        // written by prev, read here
  Inbox* next_inbox_ = nullptr;  // written here, read by next
  uint64_t sent_pieces_ = 0, received_pieces_ = 0;
  std::deque<Transfer> sends_, recvs_;
  std::deque<Unacked> unacked_;
  std::shared_ptr<Region> region_;
  std::vector<bool> done_;
  std::vector<bool> is_send_;
};

}  // namespace rt
