#pragma once

namespace rt {

// Makes std::cout and std::cerr write whole lines: each batch of complete lines leaves in one
// write(2), and a partial line waits for its newline or a flush. Ranks under one launcher share
// its output, and MPICH leaves a rank's stdout unbuffered, so every << was a write of its own and
// another rank's line could land inside ours. Called once, first thing in main; the buffers live
// until the process ends, so the streams' final flush at exit still finds them.
void write_whole_lines();

}  // namespace rt
