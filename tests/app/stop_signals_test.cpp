// StopSignals with real signals raised in this process: the first watched one is reported, a
// second SIGTERM and an expired grace period give up, and the previous handlers come back.
#include "app/run/stop_signals.h"

#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "base/check.h"

namespace rt {
namespace {

// Records what the watcher's give_up said.
struct GiveUp {
  std::mutex mutex;
  std::string message;
  std::function<void(const std::string&)> callback() {
    return [this](const std::string& m) {
      std::lock_guard<std::mutex> lock(mutex);
      message = m;
    };
  }
  // The message, waiting up to `seconds` for one.
  std::string wait(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (!message.empty()) return message;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "";
  }
};

TEST(StopSignals, ParsesNamesWithOrWithoutSigAndRefusesOthers) {
  EXPECT_EQ(parse_signal_list("SIGTERM,SIGUSR1"), (std::vector<int>{SIGTERM, SIGUSR1}));
  EXPECT_EQ(parse_signal_list("USR2, SIGINT"), (std::vector<int>{SIGUSR2, SIGINT}));
  EXPECT_TRUE(parse_signal_list("").empty());
  EXPECT_EQ(parse_signal_list("SIGTERM,TERM"), (std::vector<int>{SIGTERM}));  // each once
  try {
    parse_signal_list("SIGTERM,SIGKILL");
    ADD_FAILURE() << "SIGKILL cannot be caught and must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'SIGKILL'"), std::string::npos) << e.what();
  }
}

TEST(StopSignals, FirstSignalIsReportedAndOneAloneDoesNotGiveUp) {
  GiveUp g;
  StopSignals s({SIGTERM, SIGUSR1}, 0, g.callback());
  EXPECT_EQ(StopSignals::received(), 0);
  ASSERT_EQ(::raise(SIGUSR1), 0);
  ASSERT_EQ(::raise(SIGTERM), 0);  // one SIGTERM after another signal is not a second SIGTERM
  EXPECT_EQ(StopSignals::received(), SIGUSR1);
  EXPECT_EQ(g.wait(0.3), "");
}

TEST(StopSignals, SecondSigtermGivesUp) {
  GiveUp g;
  StopSignals s({SIGTERM}, 0, g.callback());
  ASSERT_EQ(::raise(SIGTERM), 0);
  ASSERT_EQ(::raise(SIGTERM), 0);
  const std::string m = g.wait(5);
  EXPECT_NE(m.find("second SIGTERM"), std::string::npos) << m;
  EXPECT_NE(m.find("exit status 143"), std::string::npos) << m;
}

// Once the save is done, nothing is cut short: a second SIGTERM no longer gives up.
TEST(StopSignals, NothingGivesUpAfterTheSave) {
  GiveUp g;
  StopSignals s({SIGTERM}, 0, g.callback());
  ASSERT_EQ(::raise(SIGTERM), 0);
  StopSignals::saved();
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_EQ(g.wait(0.3), "");
}

TEST(StopSignals, GracePeriodRunningOutGivesUp) {
  GiveUp g;
  const auto start = std::chrono::steady_clock::now();
  StopSignals s({SIGUSR2}, 0.3, g.callback());
  ASSERT_EQ(::raise(SIGUSR2), 0);
  const std::string m = g.wait(5);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(m.find("checkpoint.signal_grace_s = 0.3 s passed since SIGUSR2"), std::string::npos) << m;
  EXPECT_GE(waited, 0.3);
}

// Outside a StopSignals the process's own handler is back: SIG_IGN stays SIG_IGN.
TEST(StopSignals, PreviousHandlersComeBack) {
  struct sigaction ignore {
  }, before{}, after{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGUSR1, &ignore, &before), 0);
  {
    StopSignals s({SIGUSR1}, 0, [](const std::string&) {});
  }
  ASSERT_EQ(sigaction(SIGUSR1, &before, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_IGN);
}

// After training a watched signal is ignored to the end: one that Slurm sends while the ranks
// finalize must not replace the job's status with its own (raise() would end this test), and a
// second SIGTERM must not abandon a job that has finished.
TEST(StopSignals, IgnoredOnceTrainingIsOver) {
  struct sigaction usr1_before {
  }, term_before{}, after{};
  ASSERT_EQ(sigaction(SIGUSR1, nullptr, &usr1_before), 0);
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &term_before), 0);
  {
    GiveUp g;
    StopSignals s({SIGUSR1, SIGTERM}, 0, g.callback());
    ASSERT_EQ(::raise(SIGTERM), 0);  // the first, during training: counted
    s.ignore_after_training();
    ASSERT_EQ(::raise(SIGTERM), 0);  // while the trainer tears down: ignored
    ASSERT_EQ(::raise(SIGUSR1), 0);
    EXPECT_EQ(g.wait(0.3), "");
  }
  ASSERT_EQ(sigaction(SIGUSR1, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_IGN);
  ASSERT_EQ(::raise(SIGUSR1), 0);
  ASSERT_EQ(sigaction(SIGUSR1, &usr1_before, nullptr), 0);
  ASSERT_EQ(sigaction(SIGTERM, &term_before, nullptr), 0);
}

}  // namespace
}  // namespace rt
