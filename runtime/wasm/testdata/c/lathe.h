/*
 * lathe.h: a small helper for lathe tools written in C.
 *
 * A tool reads one request of lathe's process protocol (docs/protocol.md)
 * from standard input and writes one answer to standard output. This
 * helper reads and checks the request, finds its fields and arguments, and
 * writes answers with proper JSON escaping. It needs nothing but the C
 * standard library, so the same source builds as a WASI command module
 * (clang --target=wasm32-wasi --sysroot=/usr -O2) or as a native program.
 *
 * The request comes from lathe, but its arguments come from a model, which
 * may be hostile: the reader checks the whole request as JSON before
 * anything looks at it, bounds its size and its nesting, and every accessor
 * stays within the bytes of the value it is given.
 */
#ifndef LATHE_H
#define LATHE_H

#include <stddef.h>
#include <stdio.h>

/* The largest request the reader accepts, in bytes. */
#define LATHE_MAX_REQUEST (16u << 20)

/* The deepest nesting of arrays and objects the reader accepts. */
#define LATHE_MAX_DEPTH 64

/* lathe_value is one JSON value: the bytes of its text within the request
 * (n is 0 for a value that is absent). */
typedef struct {
	const char *p;
	size_t n;
} lathe_value;

/* lathe_request is the request, read and checked. */
typedef struct {
	char *buf;             /* the request's bytes, owned */
	size_t len;
	lathe_value object;    /* the whole object */
	long long protocol;    /* the protocol version, 0 when absent */
	char *action;          /* "run", "schema" or "format_arguments", never NULL */
	char *tool;            /* the tool's name; NULL when absent */
	lathe_value arguments; /* an object: "{}" when absent */
	lathe_value answers;   /* an object; n is 0 when absent */
	char *workspace;       /* context.root, the workspace root; NULL when absent */
} lathe_request;

/* lathe_read_request reads the request: one JSON object on one line of
 * standard input (or all of it, up to its end). It returns 0, or -1 with a
 * message in err saying what was wrong. */
int lathe_read_request(lathe_request *req, char *err, size_t errlen);

/* lathe_parse_request checks and reads a request from buf (len bytes,
 * which it takes over: lathe_request_free frees it). */
int lathe_parse_request(lathe_request *req, char *buf, size_t len, char *err, size_t errlen);

/* lathe_request_free frees what the request holds. */
void lathe_request_free(lathe_request *req);

/* lathe_get finds the member key of the object obj and returns 1 with its
 * value in out, or 0 when obj is not an object or has no such member. */
int lathe_get(lathe_value obj, const char *key, lathe_value *out);

/* lathe_string decodes a JSON string into a new NUL-terminated buffer and
 * its length (the string may hold NUL bytes), or returns NULL when v is not
 * a string or memory runs out. The caller frees it. */
char *lathe_string(lathe_value v, size_t *len);

/* lathe_int reads an integer (5 and 5.0 alike) into out and returns 1, or
 * 0 when v is not an integer that fits a long long. */
int lathe_int(lathe_value v, long long *out);

/* lathe_bool reads true or false into out and returns 1, or 0 when v is
 * neither. */
int lathe_bool(lathe_value v, int *out);

/* lathe_path returns the path p of a tool's argument as a new absolute
 * path: p itself when it is absolute, else p within the request's
 * workspace. wasi-libc resolves a relative path against its own working
 * directory, which starts at "/" whatever the host says, and changing it
 * needs a look at the workspace root that a tool reading only some of it
 * is not allowed; so a tool joins the paths itself. It returns NULL when
 * memory runs out. The caller frees it. */
char *lathe_path(const lathe_request *req, const char *p);

/* lathe_write_string writes s (n bytes) as a JSON string, quoted and
 * escaped; bytes that are not UTF-8 become U+FFFD. */
void lathe_write_string(FILE *f, const char *s, size_t n);

/* lathe_success answers with a text result of n bytes, and structured
 * content when structured is not NULL (a JSON object, written as it is). */
void lathe_success(const char *text, size_t n, const char *structured);

/* lathe_error answers that the tool failed with message. */
void lathe_error(const char *message);

/* lathe_errorf is lathe_error with a printf format. */
void lathe_errorf(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* lathe_ask_boolean answers that the tool needs a yes or a no to the
 * question id, shown to a person as text. */
void lathe_ask_boolean(const char *id, const char *text, size_t n);

#endif
