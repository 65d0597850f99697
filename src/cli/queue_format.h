// `shoal queue --format` (squeue -o): the columns a user names, in squeue's
// notation, so that the formats people keep in scripts and aliases work.
// For the commands' .cc files only (it includes the JSON library).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/json.h"
#include "core/status.h"

namespace shoal::cli {

// A line of the queue: a job, or an array's pending tasks gathered into one
// (squeue's 7_[4-9]).
struct QueueRow {
  const api::Json* job = nullptr;  // the first of the gathered tasks
  std::string id;                  // as squeue's %i: 12, 7_3, 7_[4-9%2]
  std::string tasks;               // as %K: 3, 4-9, or N/A for a job outside an array
};

// The queue's lines from a listing's jobs (which must outlive them): each
// job, but an array's pending tasks gathered into one line (7_[4-9]), as
// squeue shows them, at the place of the first.
std::vector<QueueRow> QueueRows(const api::Json& listed);

// A format: literal text and fields "%[.][SIZE]X" (X a letter below; "."
// right-justifies; SIZE pads the field to that width and cuts what is
// longer, as squeue does), "%%" for a percent sign.
//
//   %i JOBID            %A JOBID (the number)  %F ARRAY_JOB_ID   %K ARRAY_TASK_ID
//   %j NAME             %u USER                %a ACCOUNT        %P PARTITION
//   %q QOS              %t ST (PD, R, CD...)   %T STATE          %M TIME (used)
//   %l TIME_LIMIT       %L TIME_LEFT           %D NODES          %C CPUS
//   %m MIN_MEMORY       %b TRES_PER_NODE       %R NODELIST(REASON)
//   %r REASON           %N NODELIST            %Y SCHEDNODES     %S START_TIME
//   %V SUBMIT_TIME      %e END_TIME            %Q PRIORITY       %Z WORK_DIR
//   %o COMMAND          %k COMMENT             %E DEPENDENCY
class QueueFormat {
 public:
  // An unknown letter, a "%" at the end or a size without a letter is an
  // error that names it (squeue prints such fields literally).
  static Result<QueueFormat> Parse(std::string_view spec);

  std::string Header() const;
  // `now`: Unix seconds, for the time a running job has used and has left.
  std::string Line(const QueueRow& row, double now) const;
  // Whether a field needs what a brief listing leaves out (%o, the command).
  bool NeedsCommand() const;

 private:
  struct Piece {
    std::string literal;  // printed as it is when `field` is 0
    char field = 0;
    int size = 0;  // 0: as long as the value
    bool right = false;
  };
  std::vector<Piece> pieces_;
};

// A job's command as `show` and %o print it: the command line, or for a
// batch script its first line that is not blank nor a comment.
std::string JobCommand(const api::Json& spec);

// Seconds as Slurm writes a duration: M:SS, H:MM:SS, or D-HH:MM:SS.
std::string SlurmDuration(double seconds);

}  // namespace shoal::cli
