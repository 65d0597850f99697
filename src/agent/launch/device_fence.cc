#include "agent/launch/device_fence.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/files.h"

namespace shoal::agent {

namespace {

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

// r<dst> = *(u32 *)(r<src> + off)
bpf_insn LoadWord(uint8_t dst, uint8_t src, int16_t off) {
  return Insn(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0);
}
// if r<dst> != imm goto pc + 1 + off
bpf_insn JumpIfNot(uint8_t dst, int32_t imm, int16_t off) {
  return Insn(BPF_JMP | BPF_JNE | BPF_K, dst, 0, off, imm);
}
// r0 = value; exit (two instructions)
void PushReturn(std::vector<bpf_insn>& out, int32_t value) {
  out.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, value));
  out.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
}

long Bpf(int cmd, bpf_attr& attr) {
  return ::syscall(SYS_bpf, cmd, &attr, sizeof attr);
}

Result<int> Load(const std::vector<bpf_insn>& program) {
  static const char kLicense[] = "GPL";
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<uint64_t>(program.data());
  attr.insn_cnt = static_cast<uint32_t>(program.size());
  attr.license = reinterpret_cast<uint64_t>(kLicense);
  const long fd = Bpf(BPF_PROG_LOAD, attr);
  if (fd < 0) return Internal(ErrnoMessage("cannot load the GPU device fence (bpf)"));
  return static_cast<int>(fd);
}

}  // namespace

std::vector<bpf_insn> DeviceDenyProgram(const std::vector<GpuDeviceNode>& deny) {
  // struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32 minor; }:
  // the device's type is the low 16 bits of access_type.
  std::vector<bpf_insn> p;
  p.push_back(LoadWord(2, 1, 0));
  p.push_back(Insn(BPF_ALU64 | BPF_AND | BPF_K, 2, 0, 0, 0xffff));
  p.push_back(LoadWord(3, 1, 4));
  p.push_back(LoadWord(4, 1, 8));
  // Not a character device: allowed (past every device's four instructions).
  p.push_back(JumpIfNot(2, BPF_DEVCG_DEV_CHAR, static_cast<int16_t>(4 * deny.size())));
  for (const GpuDeviceNode& d : deny) {
    p.push_back(JumpIfNot(3, static_cast<int32_t>(d.major), 3));
    p.push_back(JumpIfNot(4, static_cast<int32_t>(d.minor), 2));
    PushReturn(p, 0);
  }
  PushReturn(p, 1);
  return p;
}

Status AttachDeviceDeny(const std::string& cgroup_dir, const std::vector<GpuDeviceNode>& deny) {
  SHOAL_ASSIGN_OR_RETURN(int program, Load(DeviceDenyProgram(deny)));
  const int cgroup = ::open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cgroup < 0) {
    Status error = Internal(ErrnoMessage("open " + cgroup_dir));
    ::close(program);
    return error;
  }
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.target_fd = static_cast<uint32_t>(cgroup);
  attr.attach_bpf_fd = static_cast<uint32_t>(program);
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = BPF_F_ALLOW_MULTI;
  const bool attached = Bpf(BPF_PROG_ATTACH, attr) == 0;
  Status status =
      attached ? Status::Ok()
               : Internal(ErrnoMessage("cannot attach the GPU device fence to " + cgroup_dir));
  // The cgroup holds the program from now on.
  ::close(cgroup);
  ::close(program);
  return status;
}

bool CanLoadDevicePrograms() {
  auto program = Load(DeviceDenyProgram({}));
  if (!program.ok()) return false;
  ::close(*program);
  return true;
}

}  // namespace shoal::agent
