/*
 * line_count: a lathe tool in C, built as a WASI command module. It counts
 * the lines and bytes of a file in the workspace.
 *
 * Build it with make (or the one command in the Makefile) and name the
 * module in lathe.toml; lathe runs it with wazero, and the module reaches
 * only the files its read permission names:
 *
 *	[tools.line_count]
 *	command = ["examples/wasm-c/line_count.wasm"]
 *	read = ["src/"]
 */
#include "lathe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char schema[] =
	"{\"tools\":[{\"name\":\"line_count\",\"summary\":\"Count the lines of a file.\","
	"\"description\":\"Counts the lines and bytes of a file in the workspace.\","
	"\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
	"\"description\":\"The file, relative to the workspace.\"}},"
	"\"required\":[\"path\"],\"additionalProperties\":false},"
	"\"output_schema\":{\"type\":\"object\",\"properties\":{\"lines\":{\"type\":\"integer\"},"
	"\"bytes\":{\"type\":\"integer\"}}},"
	"\"annotations\":{\"readOnlyHint\":true}}]}\n";

static void line_count(lathe_request *req) {
	lathe_value v = {0};
	char *arg, *path, buf[8192], text[64], structured[96];
	unsigned long long lines = 0, bytes = 0;
	size_t n, i;
	FILE *f;
	if (!lathe_get(req->arguments, "path", &v) || (arg = lathe_string(v, NULL)) == NULL) {
		lathe_error("the argument path is missing or not a string");
		return;
	}
	/* A relative path is the workspace's: lathe_path makes it absolute. */
	path = lathe_path(req, arg);
	if (path == NULL || (f = fopen(path, "r")) == NULL) {
		lathe_errorf("cannot open %s: %s", arg, strerror(path == NULL ? ENOMEM : errno));
		free(path);
		free(arg);
		return;
	}
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		bytes += n;
		for (i = 0; i < n; i++)
			lines += buf[i] == '\n';
	}
	if (ferror(f)) {
		lathe_errorf("cannot read %s: %s", arg, strerror(errno));
	} else {
		snprintf(text, sizeof text, "%llu lines", lines);
		snprintf(structured, sizeof structured, "{\"lines\":%llu,\"bytes\":%llu}", lines, bytes);
		lathe_success(text, strlen(text), structured);
	}
	fclose(f);
	free(path);
	free(arg);
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
		line_count(&req);
	else
		lathe_errorf("the action %s is not supported", req.action);
	lathe_request_free(&req);
	return fflush(stdout) == 0 ? 0 : 1;
}
