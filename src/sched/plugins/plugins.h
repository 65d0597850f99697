// Factories for the plugins shipped with Shoal; BuiltinRegistry() names them.
#pragma once

#include <memory>

#include "sched/plugin.h"

namespace shoal::sched::plugins {

std::shared_ptr<const SortPlugin> MakeFifoSort();
std::shared_ptr<const SortPlugin> MakeMultifactorSort();
std::shared_ptr<const SortPlugin> MakeLasSort();
std::shared_ptr<const SortPlugin> MakeOracleSort();
std::shared_ptr<const SortPlugin> MakeGittinsSort();

std::shared_ptr<const FilterPlugin> MakePartitionFilter();
std::shared_ptr<const FilterPlugin> MakeLabelsFilter();
std::shared_ptr<const FilterPlugin> MakeGpuModelFilter();

std::shared_ptr<const ReservePlugin> MakeQueueMode(QueueMode mode);

std::shared_ptr<const ScorePlugin> MakeFirstFitScore();
std::shared_ptr<const ScorePlugin> MakeBestFitScore();
std::shared_ptr<const ScorePlugin> MakeRandomScore();
std::shared_ptr<const ScorePlugin> MakeTopologyScore();
std::shared_ptr<const ScorePlugin> MakeFgdScore();

std::shared_ptr<const PreemptPlugin> MakeClassPreempt();
std::shared_ptr<const PreemptPlugin> MakeSrtfPreempt();
std::shared_ptr<const PreemptPlugin> MakeTierPreempt();
std::shared_ptr<const PreemptPlugin> MakeQosPreempt();

// Multifactor priority of one job (exposed for `shoal show` and tests).
double MultifactorPriority(const SortContext& ctx, const JobInfo& job);
// The LAS queue a job is in (0 is the top).
int LasQueue(const SortContext& ctx, const JobInfo& job);
// The first of LAS's thresholds above `attained_gpu_s` from which the queue
// is above `above`; infinity past the last.
double NextLasThreshold(const PolicyParams& p, double attained_gpu_s, double above);

}  // namespace shoal::sched::plugins
