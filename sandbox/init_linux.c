//go:build linux && cgo

// The sandbox's init. A C constructor, it runs when the dynamic loader
// starts the binary, before Go's runtime: a process started by Config.Wrap
// with argv[0] "lathe-sandbox-init" sets up its sandbox here and executes
// the tool without ever starting Go. That saves Go's start-up on every
// sandboxed call, and it leaves the process single-threaded, which joining
// a user namespace (setns) requires.
//
// The init is deliberately simple: lathe works out everything (which
// namespaces to join, the Landlock rules, the seccomp program, the limits)
// and passes it as key/value arguments; the init carries them out in a
// fixed order and fails closed, with exit status 126, on any error.
//
//	argv[0]  "lathe-sandbox-init"
//	argv[1…] key value pairs, then "--", then the tool's argv
//
// Keys, in the order they are carried out:
//
//	lathe FD       FD is the read end of a pipe whose write end only lathe
//	               holds: it reads as closed once lathe has exited, however
//	               it ended, SIGKILL included
//	fork 1         become a child subreaper, fork the tool's process, and
//	               supervise it (below); the steps after this one are the
//	               tool's
//	cgroup FILE    write 0 to FILE (a cgroup.procs file): join the cgroup
//	setns FD       join the namespace open as FD (the user namespace first)
//	unshare FLAGS  unshare(2) with FLAGS; with CLONE_NEWPID the init forks
//	               and supervises the child, PID 1 of the new namespace
//	keep PATH      take a copy of the mounts at PATH (open_tree)
//	tmpfs PATH     mount a fresh tmpfs on PATH
//	rebind PATH    put the next kept copy back at PATH, which the tmpfs
//	               covered (a workspace under /tmp)
//	proc PATH      mount the PID namespace's proc on PATH
//	dir PATH       change directory
//	dropcaps 1     drop every capability, for good
//	               (no_new_privs is always set after this step)
//	landlock "FS NET SCOPED SIZE FILEMASK"
//	               a Landlock ruleset (ruleset attribute and its size, and
//	               the rights that apply to files rather than directories)
//	allow "MASK:PATH"
//	               a Landlock rule
//	restrict 1     restrict the process to the ruleset
//	seccomp HEX    a seccomp program, struct sock_filter in hex
//	rlimit "RES VALUE"
//	               setrlimit, soft and hard
//	path FILE      the program to execute
//
// Before any step the init makes sure it is a session leader (lathe starts
// it with setsid, so it has no controlling terminal and cannot open
// /dev/tty), and puts /dev/null in place of any standard descriptor that
// is a terminal: a tool never reaches the terminal lathe runs in.
//
// Supervising, the init passes TERM, INT, HUP, QUIT, USR1 and USR2 on to its
// child, takes SIGRTMAX as lathe's request to kill the child at once (and
// then the rest, as below), reaps whatever is reparented to it, and when
// the child ends, kills
// what is left of the child's descendants and exits as the child did (the
// same status, or the same signal). When lathe's pipe closes first, it kills
// the child and every descendant and exits. The child itself has
// PR_SET_PDEATHSIG = SIGKILL, so it goes if the init is killed.

// The same constructor builds a template (template_linux.go) when argv[0] is
// "lathe-sandbox-template": it is started by lathe in new user, mount, PID
// and (with the network off) network namespaces, carries out these steps,
// writes "ok" to standard output and waits for standard input to close,
// while lathe opens its namespaces.
//
//	private 1       make every mount private
//	open PATH       take a copy of the host's mounts at PATH (open_tree),
//	                for a later bind
//	newroot DIR     mount the new root, a small tmpfs, on DIR, with empty
//	                tmp, dev (a tmpfs) and proc directories
//	bind MODE:PATH  bind the next opened path at PATH in the new root,
//	                MODE "ro" or "rw", nosuid, keeping the host's flags
//	symlink TARGET  then "at PATH": a symbolic link in the new root
//	hide PATH       cover PATH with an empty read-only tmpfs
//	dev 1           the /dev/fd and std* links; /dev made read-only
//	proc 1          mount proc (of the builder's PID namespace)
//	pivot 1         pivot_root into the new root, detach the old one, and
//	                make the new root read-only

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>

#ifndef __NR_open_tree
#define __NR_open_tree 428
#define __NR_move_mount 429
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

struct lathe_ll_attr {
	uint64_t fs, net, scoped;
};

struct lathe_ll_path {
	uint64_t allowed;
	int32_t fd;
} __attribute__((packed));

static void lathe_die(const char *what, const char *arg) {
	int e = errno;
	if (arg)
		fprintf(stderr, "lathe sandbox: %s %s: %s\n", what, arg, strerror(e));
	else
		fprintf(stderr, "lathe sandbox: %s: %s\n", what, strerror(e));
	_exit(126);
}

static void lathe_bad(const char *what, const char *arg) {
	fprintf(stderr, "lathe sandbox: bad init argument %s %s\n", what, arg ? arg : "");
	_exit(126);
}

static unsigned long long lathe_num(const char *key, const char *s) {
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end)
		lathe_bad(key, s);
	return v;
}

static pid_t lathe_child;

static void lathe_forward(int sig) {
	if (lathe_child > 0)
		kill(lathe_child, sig);
}

static void lathe_nothing(int sig) {
	(void)sig;
}

// lathe_end is lathe's request to end the run at once, with everything in
// it (sandbox.Kill): the init kills the child, and then, the child gone,
// whatever is left. A SIGKILL from lathe would end the init first and leave
// the descendants that left the tool's process group to the system.
#define LATHE_END_SIGNAL 64 // SIGRTMAX: the kernel's last signal, as sandbox.Kill sends it
static volatile sig_atomic_t lathe_ending;

static void lathe_end(int sig) {
	(void)sig;
	lathe_ending = 1;
	if (lathe_child > 0)
		kill(lathe_child, SIGKILL);
}

// lathe_kill_children sends SIGKILL to every child of the init: the list
// the kernel keeps in /proc/self/task/TID/children, or, on a kernel built
// without it, a scan of /proc for processes whose parent is the init.
static void lathe_kill_children(void) {
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%ld/children", (long)syscall(SYS_gettid));
	FILE *f = fopen(path, "re");
	if (f) {
		long pid;
		while (fscanf(f, "%ld", &pid) == 1)
			kill((pid_t)pid, SIGKILL);
		fclose(f);
		return;
	}
	DIR *d = opendir("/proc");
	if (!d)
		return;
	pid_t self = getpid();
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char stat[64], buf[512];
		snprintf(stat, sizeof stat, "/proc/%s/stat", e->d_name);
		int fd = open(stat, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		// The command name, in parentheses, may hold anything: the
		// parent's pid is the second field after the last ')'.
		char *p = strrchr(buf, ')');
		long ppid;
		if (p && sscanf(p + 1, " %*c %ld", &ppid) == 1 && ppid == self)
			kill((pid_t)atol(e->d_name), SIGKILL);
	}
	closedir(d);
}

// lathe_kill_rest kills and reaps every process left below the init. A
// process killed hands its own children to the init, a subreaper, so the
// round repeats until no child is left.
static void lathe_kill_rest(void) {
	for (;;) {
		pid_t p;
		while ((p = waitpid(-1, NULL, WNOHANG)) > 0)
			;
		if (p < 0 && errno != EINTR)
			return; // ECHILD: nothing is left
		lathe_kill_children();
		p = waitpid(-1, NULL, 0);
		if (p < 0 && errno == ECHILD)
			return;
	}
}

// lathe_wait is the init's part once it has forked the tool's process (or
// PID 1 of the new PID namespace): pass signals on, reap, watch lathe's
// pipe, and end as the child ended, leaving nothing behind.
static void lathe_wait(pid_t child, int lathe_fd) {
	lathe_child = child;
	int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
	size_t nsigs = sizeof sigs / sizeof sigs[0];
	// Signals arrive only inside ppoll, so that none is lost between a
	// look at the child and the wait.
	sigset_t blocked, none;
	sigemptyset(&blocked);
	sigemptyset(&none);
	sigaddset(&blocked, SIGCHLD);
	sigaddset(&blocked, LATHE_END_SIGNAL);
	for (size_t i = 0; i < nsigs; i++)
		sigaddset(&blocked, sigs[i]);
	sigprocmask(SIG_BLOCK, &blocked, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = lathe_forward;
	for (size_t i = 0; i < nsigs; i++)
		sigaction(sigs[i], &sa, NULL);
	sa.sa_handler = lathe_nothing;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_handler = lathe_end;
	sigaction(LATHE_END_SIGNAL, &sa, NULL);
	struct pollfd pf = {lathe_fd, POLLIN, 0};
	int st = 0;
	for (int done = 0; !done;) {
		pid_t p;
		int s;
		while ((p = waitpid(-1, &s, WNOHANG)) > 0) {
			if (p == child) {
				st = s;
				done = 1;
			}
		}
		if (done)
			break;
		if (p < 0 && errno == ECHILD)
			lathe_die("waiting for the tool", NULL);
		int n = ppoll(lathe_fd >= 0 ? &pf : NULL, lathe_fd >= 0 ? 1 : 0, NULL, &none);
		if (n > 0) {
			// lathe is gone: so is everything it started.
			kill(child, SIGKILL);
			lathe_kill_rest();
			_exit(128 + SIGKILL);
		}
	}
	lathe_child = 0;
	lathe_kill_rest();
	if (WIFEXITED(st))
		_exit(WEXITSTATUS(st));
	int sig = WTERMSIG(st);
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	kill(getpid(), sig);
	_exit(128 + sig);
}

// lathe_notty makes the init a session leader without a controlling
// terminal, and puts /dev/null in place of each standard descriptor that is
// a terminal, so that neither the tool nor anything it starts can read the
// terminal, write escape sequences to it or push input into it (TIOCSTI).
static void lathe_notty(void) {
	if (getsid(0) != getpid() && setsid() < 0)
		lathe_die("setsid", NULL);
	for (int fd = 0; fd < 3; fd++) {
		struct termios t;
		if (tcgetattr(fd, &t) < 0)
			continue;
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, fd) < 0)
			lathe_die("replacing a terminal with", "/dev/null");
		close(null);
	}
}

static void lathe_dropcaps(void) {
	for (int c = 0; c < 64; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;
			lathe_die("dropping capabilities", NULL);
		}
	}
	// Root in the namespace gains no capabilities at execve either.
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
	                                 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0) < 0)
		lathe_die("securebits", NULL);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		lathe_die("ambient capabilities", NULL);
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		lathe_die("capset", NULL);
}

// lathe_mountpoint makes an empty directory, or file, at path and the
// directories above it, in the fresh tmpfs.
static void lathe_mountpoint(char *path, int dir) {
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			lathe_die("mkdir", path);
		*p = '/';
	}
	if (dir) {
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			lathe_die("mkdir", path);
		return;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		lathe_die("creating", path);
	close(fd);
}

static int lathe_hex(char c) {
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void lathe_seccomp(const char *hex) {
	size_t n = strlen(hex);
	if (n == 0 || n % (2 * sizeof(struct sock_filter)))
		lathe_bad("seccomp", "(length)");
	unsigned char *buf = malloc(n / 2);
	if (!buf)
		lathe_die("seccomp", NULL);
	for (size_t i = 0; i < n / 2; i++) {
		int hi = lathe_hex(hex[2 * i]), lo = lathe_hex(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			lathe_bad("seccomp", "(digits)");
		buf[i] = (unsigned char)(hi << 4 | lo);
	}
	struct sock_fprog prog = {(unsigned short)(n / 2 / sizeof(struct sock_filter)), (struct sock_filter *)buf};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		lathe_die("seccomp", NULL);
	free(buf);
}

// lathe_at returns root followed by path, in memory of its own.
static char *lathe_at(const char *root, const char *path) {
	size_t n = strlen(root) + strlen(path) + 1;
	char *s = malloc(n);
	if (!s)
		lathe_die("memory", NULL);
	snprintf(s, n, "%s%s", root, path);
	return s;
}

// lathe_remount makes the bind mount at target read-only or not, nosuid,
// keeping the flags the host's mount carries: in a user namespace they are
// locked, and a remount without them fails.
static void lathe_remount(const char *target, int rw) {
	unsigned long flags = MS_BIND | MS_REMOUNT | MS_NOSUID;
	if (!rw)
		flags |= MS_RDONLY;
	struct statfs st;
	if (statfs(target, &st) == 0) {
		if (st.f_flags & ST_NODEV)
			flags |= MS_NODEV;
		if (st.f_flags & ST_NOEXEC)
			flags |= MS_NOEXEC;
		if (st.f_flags & ST_RDONLY)
			flags |= MS_RDONLY;
		if (st.f_flags & ST_NOATIME)
			flags |= MS_NOATIME;
		if (st.f_flags & ST_RELATIME)
			flags |= MS_RELATIME;
		if (st.f_flags & ST_NODIRATIME)
			flags |= MS_NODIRATIME;
	}
	if (mount("", target, NULL, flags, NULL) < 0)
		lathe_die("remounting", target);
}

static void lathe_template(int argc, char **argv) {
	const char *root = NULL;
	int fds[256], nfds = 0, nbound = 0;
	const char *target = NULL;
	for (int i = 1; i < argc; i += 2) {
		const char *k = argv[i];
		if (i + 1 >= argc)
			lathe_bad(k, NULL);
		const char *v = argv[i + 1];
		if (strcmp(k, "private") == 0) {
			if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
				lathe_die("private mounts", NULL);
		} else if (strcmp(k, "open") == 0) {
			if (nfds == (int)(sizeof fds / sizeof fds[0]))
				lathe_bad(k, "(too many)");
			// A detached copy of the mounts at v, taken before the new
			// root covers anything: a path that holds the new root's place
			// (/tmp, say) must not show the new root.
			int fd = (int)syscall(__NR_open_tree, AT_FDCWD, v, OPEN_TREE_CLONE | AT_RECURSIVE | O_CLOEXEC);
			if (fd < 0)
				lathe_die("opening", v);
			fds[nfds++] = fd;
		} else if (strcmp(k, "newroot") == 0) {
			root = v;
			if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k") < 0)
				lathe_die("mounting the new root on", root);
			const char *dirs[] = {"/tmp", "/dev", "/proc"};
			for (int d = 0; d < 3; d++) {
				char *p = lathe_at(root, dirs[d]);
				if (mkdir(p, 0755) < 0)
					lathe_die("mkdir", p);
				free(p);
			}
			char *dev = lathe_at(root, "/dev");
			if (mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0)
				lathe_die("mounting", dev);
			free(dev);
		} else if (!root) {
			lathe_bad(k, "(before newroot)");
		} else if (strcmp(k, "bind") == 0) {
			if (nbound == nfds || strlen(v) < 4 || v[2] != ':')
				lathe_bad(k, v);
			int rw = strncmp(v, "rw", 2) == 0, fd = fds[nbound++];
			char *t = lathe_at(root, v + 3);
			struct stat st;
			if (fstat(fd, &st) < 0)
				lathe_die("stat", v + 3);
			lathe_mountpoint(t, S_ISDIR(st.st_mode));
			if (syscall(__NR_move_mount, fd, "", AT_FDCWD, t, MOVE_MOUNT_F_EMPTY_PATH) < 0)
				lathe_die("binding", v + 3);
			close(fd);
			lathe_remount(t, rw);
			free(t);
		} else if (strcmp(k, "symlink") == 0) {
			target = v;
		} else if (strcmp(k, "at") == 0) {
			char *t = lathe_at(root, v);
			if (!target || symlink(target, t) < 0)
				lathe_die("symlink", t);
			free(t);
			target = NULL;
		} else if (strcmp(k, "hide") == 0) {
			char *t = lathe_at(root, v);
			if (mount("tmpfs", t, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0500") < 0)
				lathe_die("hiding", v);
			free(t);
		} else if (strcmp(k, "dev") == 0) {
			const char *links[][2] = {{"/proc/self/fd", "/dev/fd"}, {"/proc/self/fd/0", "/dev/stdin"},
			                          {"/proc/self/fd/1", "/dev/stdout"}, {"/proc/self/fd/2", "/dev/stderr"}};
			for (int l = 0; l < 4; l++) {
				char *t = lathe_at(root, links[l][1]);
				if (symlink(links[l][0], t) < 0)
					lathe_die("symlink", t);
				free(t);
			}
			// Runs share the template's /dev: nothing may be created in it.
			char *dev = lathe_at(root, "/dev");
			if (mount("", dev, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL) < 0)
				lathe_die("read-only", dev);
			free(dev);
		} else if (strcmp(k, "proc") == 0) {
			char *t = lathe_at(root, "/proc");
			if (mount("proc", t, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
				lathe_die("mounting proc on", t);
			free(t);
		} else if (strcmp(k, "pivot") == 0) {
			if (chdir(root) < 0)
				lathe_die("chdir", root);
			if (syscall(SYS_pivot_root, ".", ".") < 0)
				lathe_die("pivot_root", NULL);
			if (umount2(".", MNT_DETACH) < 0)
				lathe_die("detaching the old root", NULL);
			if (chdir("/") < 0)
				lathe_die("chdir", "/");
			// Nothing can be created beside the listed paths.
			if (mount("", "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
				lathe_die("read-only root", NULL);
		} else {
			lathe_bad(k, v);
		}
	}
	if (write(1, "ok\n", 3) != 3)
		lathe_die("reporting", NULL);
	char buf[64];
	while (read(0, buf, sizeof buf) > 0)
		;
	_exit(0);
}

// lathe_run is the state of a run's init, kept outside the stack so that
// the child that goes on with the steps can take it over.
struct lathe_run {
	int argc;
	char **argv, **envp;
	int next; // the index of the next step
	const char *path;
	char **tool;
	int ruleset;
	uint64_t filemask;
	int pidns;
	int kept[16], nkept, nrebound;
	int alive; // read end of the pipe that tells the child its parent lives
	int lathe; // read end of lathe's pipe, or -1
	int newpid; // the child being forked is PID 1 of a new PID namespace
};

static void lathe_steps(struct lathe_run *r);

// lathe_child_main is the tool's process (PID 1 of the new PID namespace
// under the standard profile), started by clone with the init's memory
// (CLONE_VM | CLONE_VFORK: no page tables to copy, the init waiting until
// this execs). It learns of the init's death from its parent-death signal,
// and of a death before that signal was set from the pipe closing; then it
// goes on with the steps.
static int lathe_child_main(void *arg) {
	struct lathe_run *r = arg;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		lathe_die("parent-death signal", NULL);
	struct pollfd pf = {r->alive, POLLIN, 0};
	if (poll(&pf, 1, 0) != 0)
		_exit(126);
	close(r->alive);
	if (r->newpid)
		r->pidns = 1;
	lathe_steps(r);
	return 126;
}

static char lathe_child_stack[256 * 1024] __attribute__((aligned(16)));

// lathe_fork starts the tool's process, which goes on with the steps after
// step i, and supervises it; it does not return.
static void lathe_fork(struct lathe_run *r, int i) {
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		lathe_die("pipe", NULL);
	r->alive = p[0];
	r->next = i + 2;
	pid_t c = clone(lathe_child_main, lathe_child_stack + sizeof lathe_child_stack,
	                CLONE_VM | CLONE_VFORK | SIGCHLD, r);
	if (c < 0)
		lathe_die("clone", NULL);
	close(p[0]);
	// The tool's standard input and output are its own: the init lets go
	// of its copies, so that the tool closing its output is an end of file
	// for lathe, and the tool closing its input a broken pipe. Standard
	// error stays, for the init's own messages.
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
	lathe_wait(c, r->lathe);
}

__attribute__((constructor)) static void lathe_sandbox_init(int argc, char **argv, char **envp) {
	if (argc >= 1 && strcmp(argv[0], "lathe-sandbox-template") == 0)
		lathe_template(argc, argv);
	if (argc < 2 || strcmp(argv[0], "lathe-sandbox-init") != 0)
		return;
	static struct lathe_run r;
	r.argc = argc;
	r.argv = argv;
	r.envp = envp;
	r.next = 1;
	r.ruleset = -1;
	r.lathe = -1;
	lathe_notty();
	lathe_steps(&r);
}

// lathe_steps carries out the steps from r->next on, in order (lathe
// gives them in the order of the steps), and executes the tool.
static void lathe_steps(struct lathe_run *r) {
	int argc = r->argc;
	char **argv = r->argv;
	for (int i = r->next; i < argc; i += 2) {
		const char *k = argv[i];
		if (strcmp(k, "--") == 0) {
			r->tool = argv + i + 1;
			break;
		}
		if (i + 1 >= argc)
			lathe_bad(k, NULL);
		const char *v = argv[i + 1];
		if (strcmp(k, "lathe") == 0) {
			r->lathe = (int)lathe_num(k, v);
			if (fcntl(r->lathe, F_SETFD, FD_CLOEXEC) < 0)
				lathe_die("lathe's pipe", v);
		} else if (strcmp(k, "fork") == 0) {
			// Descendants that lose their parent come to the init, which
			// can then reap them and, at the end, kill them.
			if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
				lathe_die("subreaper", NULL);
			r->newpid = 0;
			lathe_fork(r, i);
		} else if (strcmp(k, "cgroup") == 0) {
			int fd = open(v, O_WRONLY | O_CLOEXEC);
			if (fd < 0 || write(fd, "0", 1) != 1)
				lathe_die("joining cgroup", v);
			close(fd);
		} else if (strcmp(k, "setns") == 0) {
			int fd = (int)lathe_num(k, v);
			if (setns(fd, 0) < 0)
				lathe_die("joining namespace", v);
			close(fd);
		} else if (strcmp(k, "unshare") == 0) {
			int flags = (int)lathe_num(k, v);
			if (unshare(flags) < 0)
				lathe_die("unshare", v);
			if (flags & CLONE_NEWPID) {
				r->newpid = 1;
				lathe_fork(r, i);
			}
		} else if (strcmp(k, "keep") == 0) {
			if (r->nkept == (int)(sizeof r->kept / sizeof r->kept[0]))
				lathe_bad(k, "(too many)");
			int fd = (int)syscall(__NR_open_tree, AT_FDCWD, v, OPEN_TREE_CLONE | AT_RECURSIVE | O_CLOEXEC);
			if (fd < 0)
				lathe_die("keeping", v);
			r->kept[r->nkept++] = fd;
		} else if (strcmp(k, "rebind") == 0) {
			if (r->nrebound == r->nkept)
				lathe_bad(k, v);
			int fd = r->kept[r->nrebound++];
			struct stat st;
			if (fstat(fd, &st) < 0)
				lathe_die("rebinding", v);
			char *p = strdup(v);
			if (!p)
				lathe_die("rebinding", v);
			if (strcmp(p, "/tmp") != 0)
				lathe_mountpoint(p, S_ISDIR(st.st_mode));
			if (syscall(__NR_move_mount, fd, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH) < 0)
				lathe_die("rebinding", v);
			free(p);
			close(fd);
		} else if (strcmp(k, "tmpfs") == 0) {
			if (mount("tmpfs", v, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=256m") < 0)
				lathe_die("mounting tmpfs on", v);
		} else if (strcmp(k, "proc") == 0) {
			if (!r->pidns)
				lathe_bad(k, "(without a PID namespace)");
			if (mount("proc", v, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
				lathe_die("mounting proc on", v);
		} else if (strcmp(k, "dir") == 0) {
			if (chdir(v) < 0)
				lathe_die("chdir", v);
		} else if (strcmp(k, "dropcaps") == 0) {
			lathe_dropcaps();
		} else if (strcmp(k, "landlock") == 0) {
			struct lathe_ll_attr a;
			unsigned long long size;
			if (sscanf(v, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %llu %" SCNu64, &a.fs, &a.net, &a.scoped, &size, &r->filemask) != 5 ||
			    size > sizeof a)
				lathe_bad(k, v);
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
				lathe_die("no_new_privs", NULL);
			r->ruleset = (int)syscall(__NR_landlock_create_ruleset, &a, (size_t)size, 0);
			if (r->ruleset < 0)
				lathe_die("landlock ruleset", NULL);
		} else if (strcmp(k, "allow") == 0) {
			char *end;
			uint64_t mask = strtoull(v, &end, 10);
			if (r->ruleset < 0 || *end != ':')
				lathe_bad(k, v);
			const char *p = end + 1;
			int fd = open(p, O_PATH | O_CLOEXEC);
			if (fd < 0) {
				if (errno == ENOENT)
					continue;
				lathe_die("landlock path", p);
			}
			struct stat st;
			if (fstat(fd, &st) < 0)
				lathe_die("landlock path", p);
			if (!S_ISDIR(st.st_mode))
				mask &= r->filemask;
			struct lathe_ll_path rule = {mask, fd};
			if (syscall(__NR_landlock_add_rule, r->ruleset, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &rule, 0) < 0)
				lathe_die("landlock rule", p);
			close(fd);
		} else if (strcmp(k, "restrict") == 0) {
			if (r->ruleset < 0)
				lathe_bad(k, "(without a ruleset)");
			if (syscall(__NR_landlock_restrict_self, r->ruleset, 0) < 0)
				lathe_die("landlock restrict", NULL);
			close(r->ruleset);
			r->ruleset = -1;
		} else if (strcmp(k, "seccomp") == 0) {
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
				lathe_die("no_new_privs", NULL);
			lathe_seccomp(v);
		} else if (strcmp(k, "rlimit") == 0) {
			unsigned int res;
			unsigned long long val;
			if (sscanf(v, "%u %llu", &res, &val) != 2)
				lathe_bad(k, v);
			struct rlimit rl = {val, val};
			if (setrlimit(res, &rl) < 0)
				lathe_die("setrlimit", v);
		} else if (strcmp(k, "path") == 0) {
			r->path = v;
		} else {
			lathe_bad(k, v);
		}
	}
	if (!r->path || !r->tool || !r->tool[0])
		lathe_bad("path", "(missing program)");
	if (r->ruleset >= 0)
		lathe_bad("landlock", "(ruleset never applied)");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		lathe_die("no_new_privs", NULL);
	execve(r->path, r->tool, r->envp);
	lathe_die("exec", r->path);
}
