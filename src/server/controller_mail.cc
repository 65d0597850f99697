// The Controller's mail about jobs (sbatch --mail-type): which events a job
// asked for, with Slurm's subjects ("Job_id=12 Name=train Began, Queued time
// 00:00:03"), queued in the Outbox with the launches and sent by the server's
// Mailer once the batch that decided them is committed.
#include <fmt/format.h>

#include <cctype>
#include <string>

#include "server/controller.h"
#include "server/controller_internal.h"

namespace shoal::server {

namespace {

using internal::IsActive;

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& ch : out)
    ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

bool Failed(JobState s) {
  return s != JobState::kCompleted && s != JobState::kCancelled && IsTerminal(s);
}

}  // namespace

bool Controller::ArrayMailDue(const Job& j, MailEvent event) {
  if (j.array_task_id < 0 || (j.spec.mail_types & MailBit(MailEvent::kArrayTasks)) != 0)
    return true;
  // An array is mailed about as a whole: when its first task starts and when
  // its last task ends.
  const uint64_t array = j.array_job_id.value();
  if (event == MailEvent::kBegin) return arrays_mailed_.insert(array).second;
  if (event != MailEvent::kEnd && event != MailEvent::kFail) return true;
  for (JobId task : ArrayTasks(j.array_job_id)) {
    const Job* other = Find(task);
    if (other != nullptr && other->id != j.id && IsActive(other->state)) return false;
  }
  arrays_mailed_.erase(array);
  return true;
}

void Controller::MailAbout(const Job& j, MailEvent event, Time now, std::string_view detail) {
  if ((j.spec.mail_types & MailBit(event)) == 0 || !ArrayMailDue(j, event)) return;
  const bool whole_array =
      j.array_task_id >= 0 && (j.spec.mail_types & MailBit(MailEvent::kArrayTasks)) == 0;
  const std::string who =
      whole_array ? fmt::format("Array_job_id={}", j.array_job_id.value())
                  : fmt::format("Job_id={}", j.array_task_id >= 0
                                                 ? fmt::format("{}_{} ({})", j.array_job_id.value(),
                                                               j.array_task_id, j.id.value())
                                                 : std::to_string(j.id.value()));
  const Duration ran = j.start_time != Time{} ? now - j.start_time : Duration(0);
  std::string what;
  switch (event) {
    case MailEvent::kBegin:
      what = fmt::format("Began, Queued time {}", FormatDuration(now - j.submit_time));
      break;
    case MailEvent::kEnd:
    case MailEvent::kFail:
      what = fmt::format("{}, Run time {}, {}, ExitCode {}",
                         event == MailEvent::kFail ? "Failed" : "Ended", FormatDuration(ran),
                         Upper(JobStateName(j.state)), j.exit_code);
      break;
    case MailEvent::kRequeue:
      what = fmt::format("Requeued, Run time {}", FormatDuration(ran));
      break;
    case MailEvent::kInvalidDepend:
      what = "Dependency never satisfied";
      break;
    case MailEvent::kTimeLimit:
      what = fmt::format("Reached time limit, Run time {}", FormatDuration(ran));
      break;
    case MailEvent::kTimeLimit90:
    case MailEvent::kTimeLimit80:
    case MailEvent::kTimeLimit50:
      what = fmt::format("Reached {}% of time limit, Run time {}",
                         event == MailEvent::kTimeLimit90   ? 90
                         : event == MailEvent::kTimeLimit80 ? 80
                                                            : 50,
                         FormatDuration(ran));
      break;
    case MailEvent::kArrayTasks:
      return;
  }
  MailOrder m;
  m.to = j.spec.mail_user.empty() ? j.spec.user : j.spec.mail_user;
  m.subject = fmt::format("Shoal {} Name={} {}", who, j.spec.name, what);
  m.body = fmt::format("{}\n\njob {} of user {}, account {}, partition {}{}{}\n", m.subject,
                       j.id.value(), j.spec.user, j.spec.account.empty() ? "-" : j.spec.account,
                       j.spec.partition.empty() ? "(default)" : j.spec.partition,
                       detail.empty() ? "" : "\n", detail);
  outbox_.mails.push_back(std::move(m));
}

void Controller::MailEnded(const Job& j, Time now) {
  if (j.state == JobState::kTimeout) MailAbout(j, MailEvent::kTimeLimit, now);
  // One mail for the end: "Failed" when it failed and asked for FAIL (or only
  // for END), else "Ended".
  const uint16_t types = j.spec.mail_types;
  if (Failed(j.state) && (types & MailBit(MailEvent::kFail)) != 0) {
    MailAbout(j, MailEvent::kFail, now, j.reason_detail);
  } else if ((types & MailBit(MailEvent::kEnd)) != 0) {
    MailAbout(j, MailEvent::kEnd, now, j.reason_detail);
  }
}

void Controller::MailTimeLimits(const Job& j, Running& r, Time now) {
  constexpr std::pair<MailEvent, int> kMarks[] = {
      {MailEvent::kTimeLimit90, 90}, {MailEvent::kTimeLimit80, 80}, {MailEvent::kTimeLimit50, 50}};
  if (j.time_limit.count() <= 0) return;
  const double pct = 100.0 * static_cast<double>((now - j.start_time).count()) /
                     static_cast<double>(j.time_limit.count());
  // The highest mark asked for and reached, once: a mark passed unnoticed
  // (a restarted server) is not mailed late.
  for (const auto& [event, mark] : kMarks) {
    if ((j.spec.mail_types & MailBit(event)) == 0 || pct < mark) continue;
    if (r.limit_mailed_pct < mark) {
      r.limit_mailed_pct = mark;
      MailAbout(j, event, now);
    }
    return;
  }
}

}  // namespace shoal::server
