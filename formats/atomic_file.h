// Whole-file I/O for checkpoints, configs and metrics (POSIX).
// write_file_atomically: after a crash at any moment, `path` holds either the old contents or the
// new ones, never a mix; a leftover `path.tmp` from such a crash is simply overwritten next time.
// Every failure is an rt::Error naming the path and the system's reason (strerror).
#pragma once

#include <string>
#include <string_view>

namespace rt {

// Writes `path.tmp` in the same folder, fsyncs it, renames it over `path`, fsyncs the folder.
// On failure the temp file is removed and `path` is left as it was.
void write_file_atomically(const std::string& path, std::string_view bytes);

// Appends `bytes` with one write() on an O_APPEND descriptor (creating the file), so records
// from one process never interleave, and a process killed at any moment leaves whole records.
void append_bytes(const std::string& path, std::string_view bytes);
// append_bytes of `line` + '\n'. `line` should not itself contain '\n'.
void append_line(const std::string& path, std::string_view line);

// The whole file as bytes.
std::string read_file(const std::string& path);

}  // namespace rt
