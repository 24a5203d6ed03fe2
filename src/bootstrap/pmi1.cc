#include "bootstrap/pmi1.h"

#include "base/log.h"

namespace coll::bootstrap {

std::string pmiField(const std::string& line, const std::string& field) {
  std::string needle = field + "=";
  size_t pos = 0;
  while ((pos = line.find(needle, pos)) != std::string::npos) {
    if (pos == 0 || line[pos - 1] == ' ') {
      size_t start = pos + needle.size();
      size_t end = line.find_first_of(" \n", start);
      return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
    pos += needle.size();
  }
  return "";
}

Status Pmi1Client::connect(int fd, Deadline deadline, Pmi1Client* out) {
  out->fd_ = fd;
  std::string reply;
  COLL_RETURN_IF_ERROR(out->command("cmd=init pmi_version=1 pmi_subversion=1\n", "response_to_init", &reply, deadline));
  if (pmiField(reply, "rc") != "0") return transportError("PMI init refused: " + reply);
  COLL_RETURN_IF_ERROR(out->command("cmd=get_my_kvsname\n", "my_kvsname", &reply, deadline));
  out->kvsname_ = pmiField(reply, "kvsname");
  if (out->kvsname_.empty()) return transportError("PMI gave no kvsname: " + reply);
  return Status::ok();
}

Status Pmi1Client::put(const std::string& key, const std::string& value, Deadline deadline) {
  std::string reply;
  COLL_RETURN_IF_ERROR(command("cmd=put kvsname=" + kvsname_ + " key=" + key + " value=" + value + "\n", "put_result",
                               &reply, deadline));
  if (pmiField(reply, "rc") != "0") return transportError("PMI put failed: " + reply);
  return Status::ok();
}

Status Pmi1Client::get(const std::string& key, std::string* value, Deadline deadline) {
  std::string reply;
  COLL_RETURN_IF_ERROR(command("cmd=get kvsname=" + kvsname_ + " key=" + key + "\n", "get_result", &reply, deadline));
  if (pmiField(reply, "rc") != "0") return transportError("PMI get of '" + key + "' failed: " + reply);
  *value = pmiField(reply, "value");
  return Status::ok();
}

Status Pmi1Client::barrier(Deadline deadline) {
  std::string reply;
  return command("cmd=barrier_in\n", "barrier_out", &reply, deadline);
}

Status Pmi1Client::finalize(Deadline deadline) {
  std::string reply;
  return command("cmd=finalize\n", "finalize_ack", &reply, deadline);
}

// Sends one command and reads lines until the expected reply arrives.
Status Pmi1Client::command(const std::string& line, const std::string& expect_cmd, std::string* reply,
                           Deadline deadline) {
  COLL_RETURN_IF_ERROR(writeAll(fd_, line.data(), line.size(), deadline, "PMI"));
  for (;;) {
    size_t nl = buffered_.find('\n');
    if (nl != std::string::npos) {
      std::string got = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      if (pmiField(got, "cmd") == expect_cmd) {
        *reply = got;
        return Status::ok();
      }
      COLL_WARN("INIT", "unexpected PMI line ignored: %s", got.c_str());
      continue;
    }
    if (buffered_.size() > 65536) return transportError("PMI reply line too long");
    char c;
    COLL_RETURN_IF_ERROR(readAll(fd_, &c, 1, deadline, "PMI"));
    buffered_ += c;
  }
}

}  // namespace coll::bootstrap
