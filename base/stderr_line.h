#pragma once
#include <cstddef>
#include <string>

namespace rt {

// Writes text and a newline to stderr in one write(2), so that the lines of ranks that share a
// launcher's stderr pipe do not interleave mid-line (std::cerr writes each << on its own). A pipe
// keeps a write whole up to PIPE_BUF (4096 bytes on Linux); every line of ours is shorter.
void stderr_line(const std::string& text);

// Writes all `size` bytes to `fd`, retrying short writes and EINTR; gives up silently on an error
// (there is nowhere left to report a failing stdout or stderr).
void write_fully(int fd, const char* data, size_t size);

// Where stderr is a pipe (a launcher reads the ranks' output through one), waits until the reader
// has taken everything written to it, or timeout_s. Before MPI_Abort: Hydra's proxy, told to end
// the job, stops reading the failing rank's pipe, and its last words were lost.
void wait_until_stderr_is_read(double timeout_s);

}  // namespace rt
