// Mail about jobs (sbatch --mail-type), sent through the host's mail program
// with sendmail's interface: `PROGRAM -t -oi`, the whole message on standard
// input, recipients from its To: header. Slurm's slurmctld does the same with
// its MailProg.
//
// A Mailer sends off the control loop's thread, one message at a time, each
// given a time limit; its queue is bounded, and what does not fit is dropped
// and counted (mail is a courtesy: it must never slow the controller or hold
// its memory). Thread-safe; the destructor finishes the message in progress
// and drops the rest.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "server/controller.h"

namespace shoal::server {

class Mailer {
 public:
  explicit Mailer(std::string program, size_t max_queue = 1000,
                  Duration timeout = std::chrono::seconds(30));
  ~Mailer();
  Mailer(const Mailer&) = delete;
  Mailer& operator=(const Mailer&) = delete;

  void Send(std::vector<MailOrder> mails);
  // Blocks until every queued message has been handled (tests).
  void Flush();
  uint64_t sent() const;
  uint64_t failed() const;
  uint64_t dropped() const;

  // The message as the program reads it: To:, Subject: and a body, the
  // headers with line breaks and other control characters made spaces (a
  // job name cannot add a header).
  static std::string Message(const MailOrder& m);

 private:
  void Work();

  const std::string program_;
  const size_t max_queue_;
  const Duration timeout_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<MailOrder> queue_;
  bool busy_ = false;
  bool stop_ = false;
  uint64_t sent_ = 0;
  uint64_t failed_ = 0;
  uint64_t dropped_ = 0;
  std::thread worker_;
};

// Runs `program -t -oi` with `message` on its standard input (its output
// discarded); OK when it exits 0 within `timeout`, else an error saying how
// it failed (it is killed at the time limit).
Status RunMailProgram(const std::string& program, const std::string& message, Duration timeout);

// The host's sendmail, when it has one: /usr/sbin/sendmail or /usr/lib/sendmail
// if executable; else empty (no mail is sent).
std::string DefaultMailProgram();

}  // namespace shoal::server
