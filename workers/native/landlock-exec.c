// landlock-exec: starts a process that runs pack code in a Landlock domain of its own (issue 16,
// finding 3). From then on the kernel refuses that process, and everything it starts, what
// Landlock scopes to a domain: signals to any process outside it (the front, the spawner,
// every other call's process: all run as the same user, which the kernel otherwise lets
// signal each other) and connecting to their abstract unix sockets. With --no-tcp it may
// neither bind nor connect a TCP socket (UDP is not Landlock's to refuse). A JavaScript guard
// in the pack process is only a second line; this is the wall.
//
//   landlock-exec --probe      prints the kernel's Landlock ABI; exits 0 only if signals can
//                              be scoped (ABI 6, Linux 6.12)
//   landlock-exec [--no-tcp] -- PROGRAM [ARG...]
//                              enters the domain and executes PROGRAM; refuses to run it
//                              (exit 126) if the domain cannot be made
//
// Written in C because the domain must be entered by the process itself before it executes
// Node: no Node API makes these system calls, and the pack process must not load addons.
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_restrict_self 446
#endif

// The kernel's struct landlock_ruleset_attr as of ABI 6, declared here so that older headers
// (Debian 12's describe ABI 1) build it too; the kernel reads only as much as it is told.
struct ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

#define CREATE_RULESET_VERSION (1U << 0)
#define ACCESS_NET_BIND_TCP (1ULL << 0)
#define ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)
#define ABI_SCOPES 6
#define ABI_NET 4

static long abi(void) { return syscall(SYS_landlock_create_ruleset, NULL, 0, CREATE_RULESET_VERSION); }

static int refuse(const char *what) {
  fprintf(stderr, "kindgi landlock-exec: %s: %s\n", what, strerror(errno));
  return 126;
}

int main(int argc, char **argv) {
  long version = abi();
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) {
    printf("%ld\n", version < 0 ? 0 : version);
    return version >= ABI_SCOPES ? 0 : 1;
  }
  int no_tcp = 0;
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--no-tcp") == 0) no_tcp = 1;
    else {
      fprintf(stderr, "kindgi landlock-exec: unknown option %s\n", argv[i]);
      return 126;
    }
  }
  if (i + 1 >= argc) {
    fprintf(stderr, "usage: landlock-exec --probe | landlock-exec [--no-tcp] -- PROGRAM [ARG...]\n");
    return 126;
  }
  if (version < ABI_SCOPES) {
    errno = version < 0 ? errno : ENOSYS;
    return refuse("Landlock cannot scope signals on this kernel (ABI 6, Linux 6.12, needed)");
  }
  struct ruleset_attr attr = {0};
  attr.scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET;
  if (no_tcp) attr.handled_access_net = ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP;
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) return refuse("landlock_create_ruleset");
  // Required of a process without CAP_SYS_ADMIN, and right anyway: nothing it executes gains privileges.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return refuse("PR_SET_NO_NEW_PRIVS");
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) return refuse("landlock_restrict_self");
  close(ruleset);
  execv(argv[i + 1], &argv[i + 1]);
  return refuse(argv[i + 1]);
}
