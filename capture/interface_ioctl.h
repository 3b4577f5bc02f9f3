// Questions about a network interface by name, asked with ioctl on any
// socket of the namespace it is in (SIOCGIFMTU, SIOCETHTOOL).
#pragma once

#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>

#include <string>

namespace gpp::capture {

// An ifreq naming `interface` (cut to IFNAMSIZ - 1 bytes, as the kernel reads it).
inline ifreq interface_request(const std::string &interface) {
  ifreq request{};
  interface.copy(request.ifr_name, IFNAMSIZ - 1);
  return request;
}

// SIOCETHTOOL: the driver of `interface` answers `command` (an ethtool_*
// struct, its cmd set) in place; false where it does not.
inline bool ethtool_ask(int fd, const std::string &interface, void *command) {
  ifreq request = interface_request(interface);
  request.ifr_data = static_cast<char *>(command);
  return ioctl(fd, SIOCETHTOOL, &request) == 0;
}

} // namespace gpp::capture
