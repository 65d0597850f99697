// The subcommands of the `shoal` binary. Each takes the arguments after its
// name and returns the process exit code: 0 success, 1 failure, 2 bad usage.
#pragma once

#include <string>
#include <vector>

namespace shoal::cli {

int RunSim(const std::vector<std::string>& args);
int RunPlan(const std::vector<std::string>& args);
int RunPlanMix(const std::vector<std::string>& args);  // shoal plan mix
int RunServer(const std::vector<std::string>& args);
int RunSubmit(const std::vector<std::string>& args);
int RunQueue(const std::vector<std::string>& args);
int RunShow(const std::vector<std::string>& args);
int RunCancel(const std::vector<std::string>& args);
int RunHold(const std::vector<std::string>& args);
int RunRelease(const std::vector<std::string>& args);
int RunRequeue(const std::vector<std::string>& args);
int RunPriority(const std::vector<std::string>& args);
int RunHistory(const std::vector<std::string>& args);
int RunSpeeds(const std::vector<std::string>& args);
int RunNodes(const std::vector<std::string>& args);
int RunNode(const std::vector<std::string>& args);
int RunDoctor(const std::vector<std::string>& args);
int RunTop(const std::vector<std::string>& args);
int RunDrain(const std::vector<std::string>& args);
int RunResume(const std::vector<std::string>& args);
int RunToken(const std::vector<std::string>& args);
// shoal partition and shoal account: list, show, set (admin_cmds.cc).
int RunPartition(const std::vector<std::string>& args);
int RunAccount(const std::vector<std::string>& args);
int RunQos(const std::vector<std::string>& args);
int RunReservation(const std::vector<std::string>& args);
int RunLogs(const std::vector<std::string>& args);
int RunAgent(const std::vector<std::string>& args);
int RunUp(const std::vector<std::string>& args);
int RunBench(const std::vector<std::string>& args);
// shoal run (srun), shoal alloc (salloc), and the srun and scontrol of Shoal jobs (run_cmd.cc).
int RunRun(const std::vector<std::string>& args);
int RunAlloc(const std::vector<std::string>& args);
int RunSrun(const std::vector<std::string>& args);
int RunScontrol(const std::vector<std::string>& args);
// `shoal bench --cluster`: acceptance tests of nodes as Shoal jobs (bench_cluster_cmd.cc).
int RunBenchCluster(const std::vector<std::string>& args);

}  // namespace shoal::cli
