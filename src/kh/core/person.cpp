#include "kh/core/person.h"

#include <pwd.h>
#include <unistd.h>

#include <array>
#include <cstdlib>

namespace kh {

std::string person_name() {
  std::string user;
  if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name && *pw->pw_name) user = pw->pw_name;
  for (const char* var : {"USER", "LOGNAME"})
    if (user.empty())
      if (const char* v = std::getenv(var); v && *v) user = v;
  if (user.empty()) user = "uid " + std::to_string(geteuid());
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0 || host[0] == '\0') return user;
  return user + "@" + host.data();
}

bool person_at_terminal() {
  return isatty(STDIN_FILENO) != 0 && isatty(STDOUT_FILENO) != 0;
}

}  // namespace kh
