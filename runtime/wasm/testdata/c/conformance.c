/*
 * The runtime conformance suite's tools (package runtimetest), in C with
 * lathe.h: one module that holds them all and describes them.
 */
#include "lathe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OBJ(name, type, extra)                                                               \
	"{\"type\":\"object\",\"properties\":{\"" name "\":{\"type\":\"" type "\"" extra "}}," \
	"\"required\":[\"" name "\"],\"additionalProperties\":false}"

static const char schema[] =
	"{\"tools\":["
	"{\"name\":\"echo\",\"summary\":\"Echo the text.\",\"parameters\":" OBJ("text", "string", "")
	",\"annotations\":{\"readOnlyHint\":true}},"
	"{\"name\":\"fail\",\"summary\":\"Fail with the message.\",\"parameters\":" OBJ("message", "string", "") "},"
	"{\"name\":\"sleep\",\"summary\":\"Wait until stopped.\",\"parameters\":" OBJ("marker", "string", "") "},"
	"{\"name\":\"crash\",\"summary\":\"Trap without an answer.\",\"parameters\":" OBJ("message", "string", "") "},"
	"{\"name\":\"huge\",\"summary\":\"Write size bytes.\",\"parameters\":" OBJ("size", "integer", ",\"minimum\":1") "},"
	"{\"name\":\"ask\",\"summary\":\"Ask before going ahead.\",\"parameters\":" OBJ("subject", "string", "") "},"
	"{\"name\":\"scribble\",\"summary\":\"Fill new memory.\",\"parameters\":" OBJ("pages", "integer", "") "},"
	"{\"name\":\"zeroes\",\"summary\":\"Check new memory.\",\"parameters\":" OBJ("pages", "integer", "") "},"
	"{\"name\":\"request\",\"summary\":\"Show the request.\",\"parameters\":{\"type\":\"object\"}}"
	"]}\n";

/* string_arg returns the string argument name, or answers with an error
 * and returns NULL. */
static char *string_arg(lathe_request *req, const char *name, size_t *len) {
	lathe_value v = {0};
	char *s;
	if (!lathe_get(req->arguments, name, &v)) {
		lathe_errorf("the argument %s is missing", name);
		return NULL;
	}
	if ((s = lathe_string(v, len)) == NULL)
		lathe_errorf("the argument %s is not a string", name);
	return s;
}

static void echo(lathe_request *req) {
	size_t n;
	char *text = string_arg(req, "text", &n);
	if (text == NULL)
		return;
	fputs("{\"type\":\"success\",\"content\":", stdout);
	lathe_write_string(stdout, text, n);
	fputs(",\"structured\":{\"text\":", stdout);
	lathe_write_string(stdout, text, n);
	fputs("}}\n", stdout);
	free(text);
}

static void fail(lathe_request *req) {
	size_t n;
	char *msg = string_arg(req, "message", &n);
	if (msg == NULL)
		return;
	fputs("{\"type\":\"error\",\"message\":", stdout);
	lathe_write_string(stdout, msg, n);
	fputs(",\"trace\":[\"in C\"],\"transient\":false}\n", stdout);
	free(msg);
}

/* sleep_forever writes "started" to the marker file (a module runs no
 * process, so there is no pid to write) and then waits until its runtime
 * stops it. It sleeps in short steps rather than spinning, so that it
 * costs the machine nothing while it waits; a runtime must stop it either
 * way. */
static void sleep_forever(lathe_request *req) {
	char *marker = string_arg(req, "marker", NULL);
	FILE *f;
	struct timespec step = {0, 20 * 1000 * 1000};
	if (marker == NULL)
		return;
	if ((f = fopen(marker, "a")) == NULL) {
		lathe_errorf("cannot open the marker %s: %s", marker, strerror(errno));
		free(marker);
		return;
	}
	fputs("started\n", f);
	if (fclose(f) != 0) {
		lathe_errorf("cannot write the marker %s: %s", marker, strerror(errno));
		free(marker);
		return;
	}
	free(marker);
	for (;;)
		nanosleep(&step, NULL);
}

/* crash dies the hardest way a module can: a trap, after it said why on
 * standard error. */
static void crash(lathe_request *req) {
	size_t n;
	char *msg = string_arg(req, "message", &n);
	if (msg == NULL)
		return;
	fwrite(msg, 1, n, stderr);
	fputc('\n', stderr);
	fflush(stderr);
	__builtin_trap();
}

/* huge writes its answer as it goes, so that it needs no memory of its
 * size: the runtime's output cap is what must stop it. */
static void huge(lathe_request *req) {
	lathe_value v = {0};
	long long size;
	static char xs[4096];
	if (!lathe_get(req->arguments, "size", &v) || !lathe_int(v, &size) || size < 1) {
		lathe_error("the argument size is not a positive integer");
		return;
	}
	memset(xs, 'x', sizeof xs);
	fputs("{\"type\":\"success\",\"content\":\"", stdout);
	while (size > 0) {
		size_t n = size < (long long)sizeof xs ? (size_t)size : sizeof xs;
		if (fwrite(xs, 1, n, stdout) != n)
			exit(1); /* the runtime closed standard output: it stopped the call */
		size -= (long long)n;
	}
	fputs("\"}\n", stdout);
}

static void ask(lathe_request *req) {
	lathe_value v = {0};
	size_t n;
	int yes;
	char *subject = string_arg(req, "subject", &n), *text;
	if (subject == NULL)
		return;
	if (req->answers.n == 0 || !lathe_get(req->answers, "confirm", &v)) {
		static const char prefix[] = "Go ahead with ";
		text = malloc(sizeof prefix + n + 1);
		if (text == NULL) {
			lathe_error("out of memory");
		} else {
			memcpy(text, prefix, sizeof prefix - 1);
			memcpy(text + sizeof prefix - 1, subject, n);
			text[sizeof prefix - 1 + n] = '?';
			lathe_ask_boolean("confirm", text, sizeof prefix + n);
			free(text);
		}
	} else if (!lathe_bool(v, &yes)) {
		lathe_error("the answer to confirm is not true or false");
	} else if (yes) {
		fputs("{\"type\":\"success\",\"content\":", stdout);
		text = malloc(n + 10);
		if (text != NULL) {
			memcpy(text, "confirmed ", 10);
			memcpy(text + 10, subject, n);
			lathe_write_string(stdout, text, n + 10);
			free(text);
		}
		fputs("}\n", stdout);
	} else {
		fputs("{\"type\":\"error\",\"message\":", stdout);
		text = malloc(n + 9);
		if (text != NULL) {
			memcpy(text, "declined ", 9);
			memcpy(text + 9, subject, n);
			lathe_write_string(stdout, text, n + 9);
			free(text);
		}
		fputs("}\n", stdout);
	}
	free(subject);
}

/* grow grows the linear memory by the argument "pages" and returns the
 * first new byte, or NULL after answering with an error. */
static unsigned char *grow(lathe_request *req, long long *pages) {
	lathe_value v = {0};
	long old;
	if (!lathe_get(req->arguments, "pages", &v) || !lathe_int(v, pages) || *pages < 1 || *pages > 1024) {
		lathe_error("the argument pages is not an integer from 1 to 1024");
		return NULL;
	}
	old = __builtin_wasm_memory_grow(0, (unsigned long)*pages);
	if (old < 0) {
		lathe_error("memory.grow failed");
		return NULL;
	}
	return (unsigned char *)((unsigned long)old * 65536);
}

/* scribble fills memory of its own growing with a pattern, which zeroes,
 * in a later call, must never see. */
static void scribble(lathe_request *req) {
	long long pages;
	unsigned char *p = grow(req, &pages);
	if (p == NULL)
		return;
	memset(p, 0xA5, (size_t)pages * 65536);
	lathe_success("scribbled", 9, NULL);
}

/* zeroes checks that memory it grows holds only zeros, as WebAssembly
 * promises. */
static void zeroes(lathe_request *req) {
	long long pages, i;
	unsigned char *p = grow(req, &pages);
	if (p == NULL)
		return;
	for (i = 0; i < pages * 65536; i++)
		if (p[i] != 0) {
			lathe_errorf("byte %lld of the new memory is 0x%02x, not zero", i, p[i]);
			return;
		}
	lathe_success("all zero", 8, NULL);
}

/* request answers with the request it read, as its structured content,
 * for tests of what a runtime sends. */
static void request(lathe_request *req) {
	fputs("{\"type\":\"success\",\"content\":\"the request\",\"structured\":", stdout);
	fwrite(req->object.p, 1, req->object.n, stdout);
	fputs("}\n", stdout);
}

int main(void) {
	lathe_request req;
	char err[256];
	if (lathe_read_request(&req, err, sizeof err) != 0) {
		lathe_error(err);
		return 1;
	}
	if (req.protocol > 1) {
		lathe_errorf("this tool speaks protocol 1, not %lld", req.protocol);
	} else if (strcmp(req.action, "schema") == 0) {
		fputs(schema, stdout);
	} else if (strcmp(req.action, "run") != 0) {
		lathe_errorf("the action %s is not supported", req.action);
	} else if (req.tool == NULL) {
		lathe_error("the request names no tool");
	} else if (strcmp(req.tool, "echo") == 0) {
		echo(&req);
	} else if (strcmp(req.tool, "fail") == 0) {
		fail(&req);
	} else if (strcmp(req.tool, "sleep") == 0) {
		sleep_forever(&req);
	} else if (strcmp(req.tool, "crash") == 0) {
		crash(&req);
	} else if (strcmp(req.tool, "huge") == 0) {
		huge(&req);
	} else if (strcmp(req.tool, "ask") == 0) {
		ask(&req);
	} else if (strcmp(req.tool, "scribble") == 0) {
		scribble(&req);
	} else if (strcmp(req.tool, "zeroes") == 0) {
		zeroes(&req);
	} else if (strcmp(req.tool, "request") == 0) {
		request(&req);
	} else {
		lathe_errorf("no tool named %s", req.tool);
	}
	lathe_request_free(&req);
	return fflush(stdout) == 0 ? 0 : 1;
}
