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
//                                 for a line "key <key>" and imports it: writes 456
//                                 there and prints "imported <the first uint32 before>"
//                                 or "refused <code>"; then obeys lines:
//                                   spin MICROS  launches a spin kernel on the
//                                                memory, prints "launched"
//                                   sync         prints "synced <code>"
//                                   late         copies the import's first word
//                                                into memory of its own
//                                                (aclrtMemcpyAsync, no call
//                                                before it), synchronizes and
//                                                prints "late <code> <word>"
//                                   read         prints "read <code> <message>"
//                                   exit         finalizes and exits
//   sharing_client event_owner    creates an ACL_EVENT_IPC event and prints
//                                 "handle <64 characters>"; then obeys lines:
//                                   record      records it behind a 300 ms kernel,
//                                               prints "recorded"
//                                   destroy     aclrtDestroyEvent, prints "destroyed"
//                                   exit
//   sharing_client event_opener   obeys lines:
//                                   handle H    opens H, prints "opened <code>"
//                                   wait        aclrtStreamWaitEvent + synchronize,
//                                               prints "waited <code> <ms>"
//                                   record      aclrtRecordEvent + synchronize,
//                                               prints "recorded <code>"
//                                   exit
//   sharing_client physical_owner FLAGS  allocates one granule of physical memory on
//                                 device 0, maps it, writes 123 there, exports it
//                                 (aclrtMemExportToShareableHandle, FLAGS) and
//                                 prints "shareable <handle>"; then obeys lines:
//                                   allow PID   aclrtMemSetPidToShareableHandle
//                                   word        prints "word <first uint32>"
//                                   free        unmaps, releases and frees it
//                                   exit
//   sharing_client physical_importer  prints "pid <bare tgid>"; then obeys lines:
//                                   shareable S  imports S, maps it, writes 456
//                                                there and prints "imported
//                                                <the first uint32 before>" or
//                                                "refused <code>"
//                                   spin MICROS, sync, read  as for import
//                                   exit        unmaps, releases and frees what
//                                               it imported (each must succeed)
//   sharing_client physical_refused S  expects the import of S to be refused with
//                                 ACL_ERROR_RT_NO_PERMISSION
//   sharing_client notify_owner   creates a notify, exports it (whitelist on) and
//                                 prints "key <key>"; then obeys lines: allow PID,
//                                 record (prints "recorded"), destroy, exit
//   sharing_client notify_importer  prints "pid <bare tgid>"; then obeys lines:
//                                   key K     imports K, prints "imported <code>"
//                                   wait      waits on the notify and synchronizes,
//                                             prints "waited <code>"
//                                   record    prints "recorded <code>"
//                                   destroy   prints "destroyed <code>"
//                                   exit
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

using scenario::Say;

uint32_t FirstWord(void* device) {
  uint32_t word = 0;
  CheckCode(aclrtMemcpy(&word, 4, device, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS, "read word");
  return word;
}

// The importers' commands on what they imported at `memory` (spin MICROS,
// sync, read); others are ignored.
void UseImport(const std::string& command, std::istringstream& words, void* memory,
               aclrtStream stream) {
  if (command == "spin") {
    uint64_t micros = 0;
    words >> micros;
    std::vector<uint64_t> args = {reinterpret_cast<uintptr_t>(memory), micros};
    CheckCode(aclsimLaunchKernel("spin_add_one_u32", 1, args.data(), args.size() * 8, stream),
              ACL_SUCCESS, "spin on the import");
    // A synchronous call: the launch has reached acld (not only this
    // process's channel) when "launched" is said.
    aclrtStreamStatus status;
    CheckCode(aclrtStreamQuery(stream, &status), ACL_SUCCESS, "aclrtStreamQuery");
    Say("launched");
  } else if (command == "sync") {
    Say("synced " + std::to_string(aclrtSynchronizeStream(stream)));

  } else if (command == "read") {
    uint32_t word = 0;
    const aclError code = aclrtMemcpy(&word, 4, memory, 4, ACL_MEMCPY_DEVICE_TO_HOST);
    const char* message = aclGetRecentErrMsg();
    Say("read " + std::to_string(code) + " " + (message ? message : ""));
  }
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

int EventOwner() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  aclrtEvent event = nullptr;
  CheckCode(aclrtCreateEventExWithFlag(&event, ACL_EVENT_IPC), ACL_SUCCESS, "IPC event");
  aclrtIpcEventHandle handle;
  CheckCode(aclrtIpcGetEventHandle(event, &handle), ACL_SUCCESS, "aclrtIpcGetEventHandle");
  aclrtEvent plain = nullptr;
  CheckCode(aclrtCreateEvent(&plain), ACL_SUCCESS, "aclrtCreateEvent");
  aclrtIpcEventHandle refused;
  CheckCode(aclrtIpcGetEventHandle(plain, &refused), ACL_ERROR_INVALID_PARAM,
            "an event without ACL_EVENT_IPC is not shared");
  aclrtEvent own = nullptr;
  CheckCode(aclrtIpcOpenEventHandle(handle, &own), ACL_ERROR_INVALID_PARAM, "its own handle");
  Say("handle " + std::string(handle.reserved, sizeof(handle.reserved)));
  bool destroyed = false;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "record") {
      std::vector<uint64_t> args = {reinterpret_cast<uintptr_t>(word), 300000};
      CheckCode(aclsimLaunchKernel("spin_add_one_u32", 1, args.data(), args.size() * 8, stream),
                ACL_SUCCESS, "spin");
      CheckCode(aclrtRecordEvent(event, stream), ACL_SUCCESS, "aclrtRecordEvent");
      Say("recorded");
    } else if (line == "destroy") {
      CheckCode(aclrtDestroyEvent(event), ACL_SUCCESS, "aclrtDestroyEvent");
      destroyed = true;
      Say("destroyed");
    } else if (line == "exit") {
      break;
    }
  }
  if (!destroyed) CheckCode(aclrtDestroyEvent(event), ACL_SUCCESS, "aclrtDestroyEvent");
  CheckCode(aclrtDestroyEvent(plain), ACL_SUCCESS, "aclrtDestroyEvent");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

int EventOpener() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  aclrtEvent event = nullptr;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.rfind("handle ", 0) == 0) {
      aclrtIpcEventHandle handle;
      std::memset(handle.reserved, 0, sizeof(handle.reserved));
      std::memcpy(handle.reserved, line.data() + 7,
                  std::min(sizeof(handle.reserved), line.size() - 7));
      Say("opened " + std::to_string(aclrtIpcOpenEventHandle(handle, &event)));
    } else if (line == "wait") {
      const auto start = std::chrono::steady_clock::now();
      aclError code = aclrtStreamWaitEvent(stream, event);
      if (code == ACL_SUCCESS) code = aclrtSynchronizeStream(stream);
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      Say("waited " + std::to_string(code) + " " + std::to_string(waited.count()));
    } else if (line == "record") {
      aclError code = aclrtRecordEvent(event, stream);
      if (code == ACL_SUCCESS) code = aclrtSynchronizeStream(stream);
      Say("recorded " + std::to_string(code));
    } else if (line == "exit") {
      break;
    }
  }
  aclrtDestroyEvent(event);  // may have gone with its owner already
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

int NotifyOwner() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  aclrtNotify notify = nullptr;
  CheckCode(aclrtCreateNotify(&notify, 0), ACL_SUCCESS, "aclrtCreateNotify");
  char key[65] = {};
  CheckCode(aclrtNotifyGetExportKey(notify, key, sizeof(key), ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT),
            ACL_SUCCESS, "aclrtNotifyGetExportKey");
  Say(std::string("key ") + key);
  bool destroyed = false;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "allow") {
      int32_t pid = 0;
      words >> pid;
      CheckCode(aclrtNotifySetImportPid(notify, &pid, 1), ACL_SUCCESS, "aclrtNotifySetImportPid");
      Say("allowed");
    } else if (command == "record") {
      CheckCode(aclrtRecordNotify(notify, stream), ACL_SUCCESS, "aclrtRecordNotify");
      CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
      Say("recorded");
    } else if (command == "destroy") {
      CheckCode(aclrtDestroyNotify(notify), ACL_SUCCESS, "aclrtDestroyNotify");
      destroyed = true;
      Say("destroyed");
    } else if (command == "exit") {
      break;
    }
  }
  if (!destroyed) CheckCode(aclrtDestroyNotify(notify), ACL_SUCCESS, "aclrtDestroyNotify");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

int NotifyImporter() {
  scenario::Setup();
  int32_t pid = 0;
  CheckCode(aclrtDeviceGetBareTgid(&pid), ACL_SUCCESS, "aclrtDeviceGetBareTgid");
  Say("pid " + std::to_string(pid));
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  aclrtNotify notify = nullptr;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "key") {
      std::string key;
      words >> key;
      Say("imported " + std::to_string(aclrtNotifyImportByKey(&notify, key.c_str(), 0)));
    } else if (command == "wait") {
      aclError code = aclrtWaitAndResetNotify(notify, stream, 0);
      if (code == ACL_SUCCESS) code = aclrtSynchronizeStream(stream);
      Say("waited " + std::to_string(code));
    } else if (command == "record") {
      aclError code = aclrtRecordNotify(notify, stream);
      if (code == ACL_SUCCESS) code = aclrtSynchronizeStream(stream);
      Say("recorded " + std::to_string(code));
    } else if (command == "destroy") {
      Say("destroyed " + std::to_string(aclrtDestroyNotify(notify)));
    } else if (command == "exit") {
      break;
    }
  }
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

// Physical memory, one granule of it, mapped at a reservation of its own.
struct Mapped {
  aclrtDrvMemHandle handle = nullptr;
  void* address = nullptr;
  size_t size = 0;
};

size_t Granularity() {
  aclrtPhysicalMemProp prop = {};
  prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
  prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.memAttr = ACL_HBM_MEM_NORMAL;
  size_t granularity = 0;
  CheckCode(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM,
                                             &granularity),
            ACL_SUCCESS, "aclrtMemGetAllocationGranularity");
  return granularity;
}

void MapPhysical(Mapped& mapped) {
  CheckCode(aclrtReserveMemAddress(&mapped.address, mapped.size, 0, nullptr, 0), ACL_SUCCESS,
            "aclrtReserveMemAddress");
  CheckCode(aclrtMapMem(mapped.address, mapped.size, 0, mapped.handle, 0), ACL_SUCCESS,
            "aclrtMapMem");
  aclrtMemAccessDesc access = {};
  access.flags = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
  access.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  CheckCode(aclrtMemSetAccess(mapped.address, mapped.size, &access, 1), ACL_SUCCESS,
            "aclrtMemSetAccess");
}

void ReleasePhysical(Mapped& mapped) {
  CheckCode(aclrtUnmapMem(mapped.address), ACL_SUCCESS, "aclrtUnmapMem");
  CheckCode(aclrtReleaseMemAddress(mapped.address), ACL_SUCCESS, "aclrtReleaseMemAddress");
  CheckCode(aclrtFreePhysical(mapped.handle), ACL_SUCCESS, "aclrtFreePhysical");
  mapped = Mapped{};
}

void WriteWord(void* device, uint32_t value) {
  CheckCode(aclrtMemcpy(device, 4, &value, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS, "write");
}

int PhysicalOwner(uint64_t flags) {
  scenario::Setup();
  Mapped mapped;
  mapped.size = Granularity();
  aclrtPhysicalMemProp prop = {};
  prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  prop.memAttr = ACL_HBM_MEM_NORMAL;
  CheckCode(aclrtMallocPhysical(&mapped.handle, mapped.size, &prop, 0), ACL_SUCCESS,
            "aclrtMallocPhysical");
  MapPhysical(mapped);
  WriteWord(mapped.address, 123);
  uint64_t shareable = 0;
  CheckCode(aclrtMemExportToShareableHandle(mapped.handle, ACL_MEM_HANDLE_TYPE_NONE, flags,
                                            &shareable),
            ACL_SUCCESS, "aclrtMemExportToShareableHandle");
  Say("shareable " + std::to_string(shareable));
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "allow") {
      int32_t pid = 0;
      words >> pid;
      CheckCode(aclrtMemSetPidToShareableHandle(shareable, &pid, 1), ACL_SUCCESS,
                "aclrtMemSetPidToShareableHandle");
      Say("allowed");
    } else if (command == "word") {
      Say("word " + std::to_string(FirstWord(mapped.address)));
    } else if (command == "free") {
      ReleasePhysical(mapped);
      Say("freed");
    } else if (command == "exit") {
      break;
    }
  }
  return scenario::Teardown();
}

int PhysicalImporter() {
  scenario::Setup();
  int32_t pid = 0;
  CheckCode(aclrtDeviceGetBareTgid(&pid), ACL_SUCCESS, "aclrtDeviceGetBareTgid");
  Say("pid " + std::to_string(pid));
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  Mapped mapped;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "shareable") {
      uint64_t shareable = 0;
      words >> shareable;
      const aclError imported = aclrtMemImportFromShareableHandle(shareable, 0, &mapped.handle);
      if (imported != ACL_SUCCESS) {
        Say("refused " + std::to_string(imported));
        continue;
      }
      mapped.size = Granularity();
      MapPhysical(mapped);
      const uint32_t first = FirstWord(mapped.address);
      WriteWord(mapped.address, 456);
      Say("imported " + std::to_string(first));
    } else if (command == "exit") {
      break;
    } else {
      UseImport(command, words, mapped.address, stream);
    }
  }
  if (mapped.handle != nullptr) ReleasePhysical(mapped);
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

int PhysicalRefused(uint64_t shareable) {
  scenario::Setup();
  aclrtDrvMemHandle handle = nullptr;
  CheckCode(aclrtMemImportFromShareableHandle(shareable, 0, &handle), ACL_ERROR_RT_NO_PERMISSION,
            "aclrtMemImportFromShareableHandle of a handle that does not whitelist this process");
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
  // Memory of its own for "late", allocated now: a call made there would
  // read acld's notice first.
  void* own = nullptr;
  CheckCode(aclrtMalloc(&own, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  CheckCode(aclrtMemset(own, 4, 0, 4), ACL_SUCCESS, "aclrtMemset");
  void* memory = nullptr;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "late") {
      CheckCode(aclrtMemcpyAsync(own, 4, memory, 4, ACL_MEMCPY_DEVICE_TO_DEVICE, stream),
                ACL_SUCCESS, "aclrtMemcpyAsync from the import");
      const aclError synced = aclrtSynchronizeStream(stream);
      Say("late " + std::to_string(synced) + " " + std::to_string(FirstWord(own)));
    } else if (command == "key") {
      std::string key;
      words >> key;
      const aclError imported = aclrtIpcMemImportByKey(&memory, key.c_str(), 0);
      if (imported != ACL_SUCCESS) {
        Say("refused " + std::to_string(imported));
        continue;
      }
      const uint32_t first = FirstWord(memory);
      const uint32_t value = 456;
      CheckCode(aclrtMemcpy(memory, 4, &value, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS,
                "write through the import");
      CheckCode(aclrtFree(memory), ACL_ERROR_INVALID_PARAM, "an importer cannot free it");
      Say("imported " + std::to_string(first));
    } else if (command == "exit") {
      break;
    } else {
      UseImport(command, words, memory, stream);
    }
  }
  CheckCode(aclrtFree(own), ACL_SUCCESS, "aclrtFree");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "export") return Export(argc > 2 ? std::stoull(argv[2]) : 0);
  if (mode == "import") return Import();
  if (mode == "refused" && argc > 2) return Refused(argv[2]);
  if (mode == "event_owner") return EventOwner();
  if (mode == "event_opener") return EventOpener();
  if (mode == "physical_owner") return PhysicalOwner(argc > 2 ? std::stoull(argv[2]) : 0);
  if (mode == "physical_importer") return PhysicalImporter();
  if (mode == "physical_refused" && argc > 2) return PhysicalRefused(std::stoull(argv[2]));
  if (mode == "notify_owner") return NotifyOwner();
  if (mode == "notify_importer") return NotifyImporter();
  std::cerr << "usage: sharing_client export FLAGS | import\n";
  return 2;
}
