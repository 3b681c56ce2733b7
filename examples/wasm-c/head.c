/*
 * head: a lathe tool in C that reads a file through lathe's host API
 * rather than through WASI: it returns the first lines of a file in the
 * workspace. Each read is a host request (fs/read), checked against the
 * tool's read permission and the policy and recorded with its call; a file
 * the permission does not name is refused with the host's CodeDenied,
 * whose message says what to add. Built natively instead, the same source
 * is a VFS tool (runtime = "vfs"), whose requests travel on its standard
 * input and output.
 *
 *	[tools.head]
 *	command = ["examples/wasm-c/head.wasm"]
 *	read = ["src/"]
 */
#include "lathe.h"

#include <stdlib.h>
#include <string.h>

static const char schema[] =
	"{\"tools\":[{\"name\":\"head\",\"summary\":\"Show the first lines of a file.\","
	"\"description\":\"Returns the first lines of a file in the workspace, read through lathe's host API.\","
	"\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
	"\"description\":\"The file, relative to the workspace.\"},"
	"\"lines\":{\"type\":\"integer\",\"minimum\":1,\"default\":10,"
	"\"description\":\"How many lines.\"}},"
	"\"required\":[\"path\"],\"additionalProperties\":false},"
	"\"annotations\":{\"readOnlyHint\":true}}]}\n";

static void head(lathe_request *req) {
	lathe_value v = {0};
	long long lines = 10, code;
	char *path, *data, err[512];
	size_t n, i, seen = 0;
	if (!lathe_get(req->arguments, "path", &v) || (path = lathe_string(v, NULL)) == NULL) {
		lathe_error("the argument path is missing or not a string");
		return;
	}
	if (lathe_get(req->arguments, "lines", &v) && (!lathe_int(v, &lines) || lines < 1)) {
		free(path);
		lathe_error("the argument lines is not a positive integer");
		return;
	}
	/* The host resolves a relative path against the workspace itself, so
	 * unlike a path opened through WASI it needs no lathe_path. */
	code = lathe_read_file(path, &data, &n, err, sizeof err);
	if (code != 0) {
		if (code == LATHE_CODE_DENIED)
			lathe_errorf("lathe denied reading %s (%lld): %s", path, code, err);
		else
			lathe_errorf("cannot read %s (%lld): %s", path, code, err);
		free(path);
		return;
	}
	for (i = 0; i < n && seen < (size_t)lines; i++)
		if (data[i] == '\n')
			seen++;
	lathe_success(data, i, NULL);
	free(data);
	free(path);
}

int main(void) {
	lathe_request req;
	char err[256];
	if (lathe_read_request(&req, err, sizeof err) != 0) {
		lathe_error(err);
		return 1;
	}
	if (strcmp(req.action, "schema") == 0)
		fputs(schema, stdout);
	else if (strcmp(req.action, "run") == 0)
		head(&req);
	else
		lathe_errorf("the action %s is not supported", req.action);
	lathe_request_free(&req);
	return fflush(stdout) == 0 ? 0 : 1;
}
