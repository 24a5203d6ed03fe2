#include "transport/ucx/peer_card.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "base/log.h"

namespace coll::transport::ucx {
namespace {

std::string machineId() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(boot, id);
  struct stat ns {};
  if (::stat("/proc/self/ns/pid", &ns) != 0) return "";  // unknown: never watch by pid
  return id.empty() ? "" : id + "/" + std::to_string(ns.st_ino);
}

std::string toHex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

bool fromHex(const std::string& hex, std::string* out) {
  if (hex.size() % 2) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned v = 0;
    if (std::sscanf(hex.c_str() + i, "%2x", &v) != 1) return false;
    out->push_back(static_cast<char>(v));
  }
  return true;
}

}  // namespace

PeerCard PeerCard::local(std::string address) { return PeerCard{machineId(), ::getpid(), std::move(address)}; }

std::string PeerCard::encode() const {
  return (machine.empty() ? "-" : machine) + " " + std::to_string(pid) + " " + toHex(address);
}

Status PeerCard::decode(const std::string& text, PeerCard* out) {
  std::istringstream in(text);
  std::string hex;
  if (!(in >> out->machine >> out->pid >> hex) || !fromHex(hex, &out->address) || out->address.empty())
    return transportError(format("ucx: malformed peer address record '%.40s'", text.c_str()));
  if (out->machine == "-") out->machine.clear();
  return Status::ok();
}

}  // namespace coll::transport::ucx
