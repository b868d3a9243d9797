// landlock-exec: starts a process that runs pack code walled off by the kernel from every other
// process of its user (issue 16, finding 3). The front, the spawner and every pack process run
// as one user, and the kernel lets a process act on any other process of its user. This
// helper closes that before it executes Node, for the process and everything it starts:
//
// - a Landlock domain of its own, scoped for signals and abstract unix sockets: no signal
//   reaches a process outside it (the front, the spawner, every other call's process), no
//   connection their abstract sockets;
// - a seccomp filter for what Landlock does not scope: setpriority, ioprio_set, prlimit64 and
//   the sched_set* calls may name only the caller (pid 0), so it cannot renice the front to 19
//   or take its file descriptors away with a limit (not even by its own pid: a child that
//   outlives it inherits the filter, and the pid may by then be another process's); system
//   calls of another architecture (a way around a filter) are refused too;
// - an oom_score_adj of 1000: when memory runs out, the kernel kills pack processes before the
//   front or the spawner;
// - no writing into /proc, its own entries included, nor into /sys: another process's
//   autogroup nice, oom_score_adj and the like are files there, which the kernel lets any
//   process of their user write (and its own oom_score_adj it could set back to 0);
// - a session of its own, so an autogroup of its own;
// - no descriptor but its stdio and its channel (0 to 3): what the service inherited from its
//   own parent without close-on-exec reached every pack process (stop 33);
// - no listening: Landlock refuses every TCP bind, and the filter refuses listen(), which on a
//   socket never bound binds it past Landlock (the service's port on an address the front did
//   not bind was pack code's to take, stop 42);
// - with --no-network (a `network: none` process), no network: Landlock refuses TCP bind and
//   connect, and the filter refuses every socket, unix ones too (UDP and DNS included; a unix
//   socket, which Node 24's permission model does not gate, reached a listener on the machine
//   from a raw Pipe handle, stop 33), and io_uring (for every pack process), which makes sockets
//   past the filter;
// - with --keep-modes (a warm process of a pack with strict tools), no change of a file's mode or
//   ACL by path (chmod, fchmodat, fchmodat2, setxattr, lsetxattr, setxattrat): the strict calls'
//   folder root is the service user's, mode 0300 so that no one lists it, and a warm tool (a
//   child process of one, past Node's permission model) set it back to 0700, listed it, and read
//   and overwrote running strict calls' files (stop 36). Landlock has no right for modes. fchmod
//   stays: it needs a descriptor opened for reading or writing, which a 0300 folder gives no one,
//   and libuv's copyfile uses it;
// - with --call-folder (a strict call's process), writes only beneath its call folder, named by
//   KINDGI_CALL_FOLDER (removed from the environment it executes with): V8 opens the files its
//   tracing flags name itself, past Node's permission model, and a strict call wrote other
//   tenants' and the host's files so (stop 33). Writing, truncating, making, removing, linking
//   and renaming are all the kernel's to refuse elsewhere (but writing to /dev/null);
// - with --read FOLDER (repeated, with --call-folder), reads only beneath those folders and its
//   call folder: Node's permission model checks a link's own path and follows it, and a strict
//   tool read the token file through a link its pack shipped (stop 38).
//
// A JavaScript guard in the pack process is only a second line; this is the wall.
//
//   landlock-exec --probe      prints the kernel's Landlock ABI; exits 0 only if the whole wall
//                              can be put up here (ABI 6, Linux 6.12, and a seccomp filter),
//                              else 1, having said on stderr which step failed
//   landlock-exec [--no-network] [--keep-modes] [--call-folder [--read FOLDER]...] -- PROGRAM [ARG...]
//                              walls itself in and executes PROGRAM; refuses to run it
//                              (exit 126) if any part of the wall cannot be had
//
// Written in C because the wall must be put up by the process itself before it executes Node:
// no Node API makes these system calls, and the pack process must not load addons.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// Names the one folder a --call-folder process may write in (src/pool/landlock.ts, CALL_FOLDER_VARIABLE).
#define CALL_FOLDER_VARIABLE "KINDGI_CALL_FOLDER"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#endif

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#else
#error "landlock-exec knows the system call table of x86_64 and aarch64 only"
#endif

// The kernel's struct landlock_ruleset_attr as of ABI 6, declared here so that older headers
// (Debian 12's describe ABI 1) build it too; the kernel reads only as much as it is told.
struct ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

#define CREATE_RULESET_VERSION (1U << 0)
#define RULE_PATH_BENEATH 1
#define ACCESS_FS_WRITE_FILE (1ULL << 1)
#define ACCESS_FS_TRUNCATE (1ULL << 14)
#define WRITES (ACCESS_FS_WRITE_FILE | ACCESS_FS_TRUNCATE)
#define ACCESS_FS_READ_FILE (1ULL << 2)
#define ACCESS_FS_READ_DIR (1ULL << 3)
#define READS (ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR)
/** The most --read folders a command may name. */
#define MAX_READS 64
// Every right that changes what is on disk: the two above, and bits 4 to 13: removing a folder or
// a file, making a device, folder, file, socket, fifo or link, linking or renaming across folders.
#define ALL_WRITES (WRITES | (((1ULL << 14) - 1) & ~((1ULL << 4) - 1)))
#define ACCESS_NET_BIND_TCP (1ULL << 0)
#define ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)
#define ABI_SCOPES 6
#define IOPRIO_WHO_PROCESS 1

static long abi(void) { return syscall(SYS_landlock_create_ruleset, NULL, 0, CREATE_RULESET_VERSION); }

static int refuse(const char *what) {
  fprintf(stderr, "kindgi landlock-exec: %s: %s\n", what, strerror(errno));
  return 126;
}

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
// The low word of an argument: pids and the `which` of setpriority are C ints.
#define LOAD_ARG(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define IS(value, yes, no) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(value), yes, no)
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY_AS(errno_value) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (errno_value))
#define DENY DENY_AS(EPERM)

// A call whose argument `arg` is a pid: allowed for 0, the caller. Six instructions; a call it
// is not about jumps over the other four.
#define ONLY_SELF(call, arg) LOAD(nr), IS(call, 0, 4), LOAD_ARG(arg), IS(0, 0, 1), ALLOW, DENY

// setpriority and ioprio_set: `which` must name one process (not a group, not every process of
// the user) and `who` the caller. Eight instructions; a call it is not about jumps over six.
#define ONLY_SELF_PROCESS(call, process_kind) \
  LOAD(nr), IS(call, 0, 6), LOAD_ARG(0), IS(process_kind, 0, 2), LOAD_ARG(1), IS(0, 1, 0), DENY, ALLOW

static int install_filter(int no_network, int keep_modes) {
  struct sock_filter head[] = {
      LOAD(arch),
      IS(THIS_ARCH, 1, 0),
      DENY,
#if defined(__x86_64__)
      // x32 system calls share the architecture's number but set this bit.
      LOAD(nr),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x40000000, 0, 1),
      DENY,
#endif
      ONLY_SELF_PROCESS(SYS_setpriority, PRIO_PROCESS),
      ONLY_SELF_PROCESS(SYS_ioprio_set, IOPRIO_WHO_PROCESS),
      ONLY_SELF(SYS_prlimit64, 0),
      ONLY_SELF(SYS_sched_setaffinity, 0),
      ONLY_SELF(SYS_sched_setscheduler, 0),
      ONLY_SELF(SYS_sched_setparam, 0),
      ONLY_SELF(SYS_sched_setattr, 0),
      // io_uring makes sockets (IORING_OP_SOCKET) and much else inside the kernel, past every
      // rule here (an attack sent UDP from a network-none process so). libuv, which would use it
      // for files, falls back to its thread pool.
      LOAD(nr),
      IS(SYS_io_uring_setup, 2, 0),
      IS(SYS_io_uring_enter, 1, 0),
      IS(SYS_io_uring_register, 0, 1),
      DENY_AS(ENOSYS),
      // No listening at all: Landlock checks bind(), and listen() on a socket never bound has the
      // kernel bind it to a port of its choosing past that check (pure JS did, from a raw TCP
      // handle; a child process tried until it was given the service's port on [::], stop 42).
      LOAD(nr),
      IS(SYS_listen, 0, 1),
      DENY_AS(EACCES),
  };
  // --no-network: no socket at all (UDP and DNS, which Landlock does not scope; TCP, refused by
  // both; unix, packet, vsock, netlink and the rest). Three instructions; another call jumps
  // over the refusal. A process is given its pipes by its parent and makes no socket of its own.
  struct sock_filter no_ip[] = {
      LOAD(nr), IS(SYS_socket, 0, 1), DENY_AS(EACCES),
  };
  // --keep-modes: no mode or ACL set by path. Nine instructions (eight on aarch64, which has no
  // chmod); another call jumps over the refusal.
  struct sock_filter modes[] = {
      LOAD(nr),
#if defined(__x86_64__)
      IS(SYS_chmod, 6, 0),
#endif
      IS(SYS_fchmodat, 5, 0),
      IS(SYS_fchmodat2, 4, 0),
      IS(SYS_setxattr, 3, 0),
      IS(SYS_lsetxattr, 2, 0),
      IS(SYS_setxattrat, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0),
      DENY,
  };
  // head, then no_ip for --no-network, modes for --keep-modes, then: whatever no rule is about is allowed.
  struct sock_filter filter[sizeof head / sizeof head[0] + sizeof no_ip / sizeof no_ip[0] + sizeof modes / sizeof modes[0] + 1];
  size_t length = sizeof head / sizeof head[0];
  memcpy(filter, head, sizeof head);
  if (no_network) {
    memcpy(filter + length, no_ip, sizeof no_ip);
    length += sizeof no_ip / sizeof no_ip[0];
  }
  if (keep_modes) {
    memcpy(filter + length, modes, sizeof modes);
    length += sizeof modes / sizeof modes[0];
  }
  filter[length++] = (struct sock_filter)ALLOW;
  struct sock_fprog program = {.len = (unsigned short)length, .filter = filter};
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0);
}

/** Lets the domain do `rights` beneath `path`, unless it is a link (it may lead into /proc). */
static int allow_beneath(int ruleset, const char *path, uint64_t rights) {
  int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0; // gone since it was listed: nothing to allow
  struct stat st;
  if (fstat(fd, &st) != 0 || S_ISLNK(st.st_mode)) {
    close(fd);
    return 0; // what it leads to is allowed under its own name, or not at all
  }
  // A file (not a folder) takes only the rights a file can have.
  struct path_beneath_attr rule = {.allowed_access = S_ISDIR(st.st_mode) ? rights : rights & (WRITES | ACCESS_FS_READ_FILE), .parent_fd = fd};
  long added = syscall(SYS_landlock_add_rule, ruleset, RULE_PATH_BENEATH, &rule, 0);
  close(fd);
  return added == 0 ? 0 : -1;
}

/**
 * Writes anywhere but /proc and /sys, not even its own /proc entries: other processes' /proc
 * files (autogroup, oom_score_adj, …) are the kernel's way to change them, and the kernel lets
 * any process of their user write most of them (an attack set the front's autogroup to nice 19
 * from a warm child process); its own autogroup was the front's too, before setsid, and its
 * own oom_score_adj it could set back to 0 (a review found both). Landlock lists what is
 * allowed, so each entry of / is allowed but those two.
 */
static int allow_writes_but_proc(int ruleset) {
  DIR *root = opendir("/");
  if (root == NULL) return -1;
  char path[300];
  for (struct dirent *entry; (entry = readdir(root)) != NULL;) {
    const char *name = entry->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, "proc") == 0 || strcmp(name, "sys") == 0) continue;
    snprintf(path, sizeof path, "/%s", name);
    if (allow_beneath(ruleset, path, WRITES) != 0) {
      closedir(root);
      return -1;
    }
  }
  closedir(root);
  return 0;
}

/**
 * Puts this process behind the wall; 0, or 126 having said which step failed. `call_folder`:
 * the one place it may write, or NULL. `reads` (with a call folder): the only places it may
 * read, the call folder besides, or none to leave reading to Node's permission model.
 */
static int wall_in(int no_network, int keep_modes, const char *call_folder, char **reads, int read_count) {
  // A session, and so an autogroup, of its own: the kernel shares a session's CPU among its
  // autogroups, and the front's must not be this process's to renice. A process group leader
  // (a caller that made this one one) cannot: it keeps its caller's session.
  setsid();
  // Raising it needs no privilege; it cannot be written again (no write into /proc, below).
  int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (adj < 0 || write(adj, "1000", 4) != 4) return refuse("/proc/self/oom_score_adj");
  close(adj);
  struct ruleset_attr attr = {0};
  attr.handled_access_fs = call_folder == NULL ? WRITES : ALL_WRITES | (read_count > 0 ? READS : 0);
  attr.scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET;
  // No process that runs pack code listens on TCP: with the front bound to one address, a warm
  // tool with network access took the service's port on the others (::1, 127.0.0.2) and read the
  // invokes, token and all, of callers that reached it there (a red-team pass, stop 42).
  attr.handled_access_net = ACCESS_NET_BIND_TCP | (no_network ? ACCESS_NET_CONNECT_TCP : 0);
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) return refuse("landlock_create_ruleset");
  if (call_folder == NULL && allow_writes_but_proc(ruleset) != 0) return refuse("landlock_add_rule");
  if (call_folder != NULL) {
    // It exists (its spawner made it before this started) and is no link: else nothing is writable.
    struct stat st;
    if (lstat(call_folder, &st) != 0 || !S_ISDIR(st.st_mode)) return refuse(call_folder);
    // Reads are the kernel's to refuse only when it is told where they may go.
    uint64_t reading = read_count > 0 ? READS : 0;
    if (allow_beneath(ruleset, call_folder, ALL_WRITES | reading) != 0) return refuse("landlock_add_rule");
    // What is written there goes nowhere; a shell redirects to it.
    if (allow_beneath(ruleset, "/dev/null", WRITES | (reading & ACCESS_FS_READ_FILE)) != 0) return refuse("landlock_add_rule /dev/null");
    for (int r = 0; r < read_count; r++)
      if (allow_beneath(ruleset, reads[r], READS) != 0) return refuse(reads[r]);
  }
  // Required of a process without CAP_SYS_ADMIN, and right anyway: nothing it executes gains privileges.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return refuse("PR_SET_NO_NEW_PRIVS");
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) return refuse("landlock_restrict_self");
  close(ruleset);
  if (install_filter(no_network, keep_modes) != 0) return refuse("seccomp filter");
  return 0;
}

int main(int argc, char **argv) {
  long version = abi();
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) {
    printf("%ld\n", version < 0 ? 0 : version);
    fflush(stdout);
    if (version < ABI_SCOPES) return 1;
    // The whole wall, put up in a child: a seccomp profile may allow Landlock and refuse filters.
    pid_t child = fork();
    if (child == 0) _exit(wall_in(1, 1, NULL, NULL, 0));
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) return refuse("fork");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
  }
  int no_network = 0;
  int keep_modes = 0;
  int call_folder = 0;
  char *reads[MAX_READS];
  int read_count = 0;
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--no-network") == 0) no_network = 1;
    else if (strcmp(argv[i], "--keep-modes") == 0) keep_modes = 1;
    else if (strcmp(argv[i], "--call-folder") == 0) call_folder = 1;
    else if (strcmp(argv[i], "--read") == 0 && i + 1 < argc && argv[i + 1][0] == '/' && read_count < MAX_READS) reads[read_count++] = argv[++i];
    else {
      fprintf(stderr, "kindgi landlock-exec: unknown option %s\n", argv[i]);
      return 126;
    }
  }
  if (i + 1 >= argc) {
    fprintf(stderr, "usage: landlock-exec --probe | landlock-exec [--no-network] [--keep-modes] [--call-folder [--read FOLDER]...] -- PROGRAM [ARG...]\n");
    return 126;
  }
  if (version < ABI_SCOPES) {
    errno = version < 0 ? errno : ENOSYS;
    return refuse("Landlock cannot scope signals on this kernel (ABI 6, Linux 6.12, needed)");
  }
  // Not on the command line: /proc/<pid>/cmdline is readable by every process of the user.
  const char *folder = call_folder ? getenv(CALL_FOLDER_VARIABLE) : NULL;
  if (call_folder && (folder == NULL || folder[0] != '/')) {
    errno = EINVAL;
    return refuse("--call-folder without an absolute " CALL_FOLDER_VARIABLE);
  }
  if (read_count > 0 && !call_folder) {
    errno = EINVAL;
    return refuse("--read without --call-folder");
  }
  if (wall_in(no_network, keep_modes, folder, reads, read_count) != 0) return 126;
  unsetenv(CALL_FOLDER_VARIABLE);
  // Nothing but its stdio and channel (fds 0 to 3) goes on: a descriptor the service inherited
  // from its own parent without close-on-exec was open in every pack process (stop 33).
  if (syscall(SYS_close_range, 4, ~0U, 0) != 0) return refuse("close_range");
  execv(argv[i + 1], &argv[i + 1]);
  return refuse(argv[i + 1]);
}
