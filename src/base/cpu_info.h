// CpuInfo: what the CPU says it is (model name, family/model, the ISA
// extensions the kernels care about), read from /proc/cpuinfo, so that a
// benchmark prints the machine its figures came from. A plain value; no
// detection state is kept.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda {

struct CpuInfo {
  std::string vendor;      // "AuthenticAMD", "GenuineIntel"; empty when unknown
  std::string model_name;  // "AMD EPYC"; empty when unknown
  int family = -1;         // decimal, as /proc/cpuinfo prints it (-1: unknown)
  int model = -1;
  int stepping = -1;
  int n_logical = 0;  // "processor" entries
  // Of kCpuIsaFlags, those the first processor lists / does not list.
  std::vector<std::string> isa_present;
  std::vector<std::string> isa_absent;
};

// The flags that decide a kernel path, in /proc/cpuinfo spelling: the AVX2
// path needs avx2 fma f16c bmi2; the AVX-512 path also avx512f/dq/bw/vl,
// avx512_vnni and avx512_bf16 (kernels/cpu/matmul.cc); avx_vnni is listed
// because llama.cpp uses it on AVX2-only CPUs that have it.
inline constexpr std::string_view kCpuIsaFlags[] = {"avx2",     "fma",      "f16c",        "bmi2",
                                                    "avx512f",  "avx512dq", "avx512bw",    "avx512vl",
                                                    "avx512_vnni", "avx512_bf16", "avx_vnni"};

// Parses the text of /proc/cpuinfo (first processor's fields).
CpuInfo ParseCpuInfo(std::string_view text);
// ParseCpuInfo of /proc/cpuinfo; an empty CpuInfo where it cannot be read.
CpuInfo ReadCpuInfo();
// One line: "AMD EPYC (AuthenticAMD family 25 model 17 stepping 1), 2 logical CPUs".
std::string CpuSummary(const CpuInfo& cpu);

}  // namespace pagoda
