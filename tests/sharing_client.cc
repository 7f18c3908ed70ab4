// A client process sharing device memory with another through acld, driven by
// the integration tests line by line on stdin.
//
//   sharing_client export FLAGS   allocates 1 MiB on device 0, fills its first
//                                 word with 123, exports all of it and prints
//                                 "key <key>"; then obeys lines:
//                                   allow PID   aclrtIpcMemSetImportPid
//                                   word        prints "word <first uint32>"
//                                   close       aclrtIpcMemClose
//                                   free        aclrtFree
//                                   exit        finalizes and exits
//   sharing_client refused KEY    expects aclrtIpcMemImportByKey(KEY) to be refused
//                                 with ACL_ERROR_RT_NO_PERMISSION
//   sharing_client import         prints "pid <aclrtDeviceGetBareTgid> own <getpid()>", waits
//                                 for a line "key <key>" and imports it: prints
//                                 "imported <first uint32>" (then writes 456 there)
//                                 or "refused <code>"; then obeys lines:
//                                   spin MICROS  launches a spin kernel on the
//                                                memory, prints "launched"
//                                   sync         prints "synced <code>"
//                                   read         prints "read <code> <message>"
//                                   exit         finalizes and exits
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "tests/check.h"

using scenario::CheckCode;

namespace {

void Say(const std::string& line) {
  std::cout << line << std::endl;
}

uint32_t FirstWord(void* device) {
  uint32_t word = 0;
  CheckCode(aclrtMemcpy(&word, 4, device, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS, "read word");
  return word;
}

int Export(uint64_t flags) {
  scenario::Setup();
  void* memory = nullptr;
  CheckCode(aclrtMalloc(&memory, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  const uint32_t value = 123;
  CheckCode(aclrtMemcpy(memory, 4, &value, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS, "write");
  char key[65] = {};
  CheckCode(aclrtIpcMemGetExportKey(memory, 1 << 20, key, sizeof(key), flags), ACL_SUCCESS,
            "aclrtIpcMemGetExportKey");
  Say(std::string("key ") + key);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "allow") {
      int32_t pid = 0;
      words >> pid;
      CheckCode(aclrtIpcMemSetImportPid(key, &pid, 1), ACL_SUCCESS, "aclrtIpcMemSetImportPid");
      Say("allowed");
    } else if (command == "word") {
      Say("word " + std::to_string(FirstWord(memory)));
    } else if (command == "close") {
      CheckCode(aclrtIpcMemClose(key), ACL_SUCCESS, "aclrtIpcMemClose");
      Say("closed");
    } else if (command == "free") {
      CheckCode(aclrtFree(memory), ACL_SUCCESS, "aclrtFree");
      Say("freed");
    } else if (command == "exit") {
      break;
    }
  }
  return scenario::Teardown();
}

int Refused(const std::string& key) {
  scenario::Setup();
  void* memory = nullptr;
  CheckCode(aclrtIpcMemImportByKey(&memory, key.c_str(), 0), ACL_ERROR_RT_NO_PERMISSION,
            "aclrtIpcMemImportByKey of a key that does not whitelist this process");
  return scenario::Teardown();
}

int Import() {
  scenario::Setup();
  int32_t pid = 0;
  CheckCode(aclrtDeviceGetBareTgid(&pid), ACL_SUCCESS, "aclrtDeviceGetBareTgid");
  Say("pid " + std::to_string(pid) + " own " + std::to_string(getpid()));
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  void* memory = nullptr;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "key") {
      std::string key;
      words >> key;
      const aclError imported = aclrtIpcMemImportByKey(&memory, key.c_str(), 0);
      if (imported != ACL_SUCCESS) {
        Say("refused " + std::to_string(imported));
        continue;
      }
      Say("imported " + std::to_string(FirstWord(memory)));
      const uint32_t value = 456;
      CheckCode(aclrtMemcpy(memory, 4, &value, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS,
                "write through the import");
      CheckCode(aclrtFree(memory), ACL_ERROR_INVALID_PARAM, "an importer cannot free it");
    } else if (command == "spin") {
      uint64_t micros = 0;
      words >> micros;
      std::vector<uint64_t> args = {reinterpret_cast<uintptr_t>(memory), micros};
      CheckCode(aclsimLaunchKernel("spin_add_one_u32", 1, args.data(), args.size() * 8, stream),
                ACL_SUCCESS, "spin on the import");
      Say("launched");
    } else if (command == "sync") {
      Say("synced " + std::to_string(aclrtSynchronizeStream(stream)));
    } else if (command == "read") {
      uint32_t word = 0;
      const aclError code = aclrtMemcpy(&word, 4, memory, 4, ACL_MEMCPY_DEVICE_TO_HOST);
      const char* message = aclGetRecentErrMsg();
      Say("read " + std::to_string(code) + " " + (message ? message : ""));
    } else if (command == "exit") {
      break;
    }
  }
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "export") return Export(argc > 2 ? std::stoull(argv[2]) : 0);
  if (mode == "import") return Import();
  if (mode == "refused" && argc > 2) return Refused(argv[2]);
  std::cerr << "usage: sharing_client export FLAGS | import\n";
  return 2;
}
