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

/* The host API (docs/host.md): a tool whose request's context.host is 1
 * may ask lathe to read, write or list files, fetch a URL, run a command and
 * more, each request checked against the tool's permissions and the policy
 * and recorded with its call. Built for WASM, the helper calls the host
 * function lathe.host_call; built natively (a VFS tool), it writes the
 * request on standard output and reads the response from standard input. */

/* The codes of the host's errors (docs/host.md, "Errors"). */
#define LATHE_CODE_DENIED (-32001)    /* the permissions or the policy refused it */
#define LATHE_CODE_FAILED (-32002)    /* allowed, and it failed (no such file) */
#define LATHE_CODE_ENDED (-32003)     /* the call has ended; nothing was done */
#define LATHE_CODE_TOO_LARGE (-32004) /* the request or its answer is over a limit */

/* The largest host response the helper accepts, in bytes: a part of a file
 * read (16 MiB by default) in base64, and its envelope. */
#define LATHE_MAX_RESPONSE (24u << 20)

/* lathe_response is the host's answer to one request. */
typedef struct {
	char *buf;          /* the response's bytes, owned */
	size_t len;
	long long code;     /* 0 on success, else the error's code (LATHE_CODE_...) */
	char *message;      /* the error's message; NULL on success */
	lathe_value result; /* the result on success; n is 0 on an error */
} lathe_response;

/* lathe_host_call sends the host request method with params, the text of a
 * JSON object (NULL for none), and reads the host's answer into resp. It
 * returns 0 when the host answered, whether with a result or an error
 * (resp->code says which), and -1 with a message in err when there is no
 * answer: no host, or an answer that is not a well-formed response. Free
 * resp with lathe_response_free in either case. */
int lathe_host_call(const char *method, const char *params, lathe_response *resp, char *err, size_t errlen);

/* lathe_response_free frees what the response holds. */
void lathe_response_free(lathe_response *resp);

/* lathe_read_file reads the whole file at path (relative to the workspace,
 * or absolute) through the host's fs/read, in as many parts as it takes,
 * into a new NUL-terminated buffer *data of *len bytes, which the caller
 * frees. It returns 0; the host's error code (LATHE_CODE_DENIED when the
 * permissions do not name the file, LATHE_CODE_FAILED when it does not
 * exist) with its message in err; or -1 with a message in err when the
 * host did not answer or memory ran out. */
long long lathe_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen);

#endif
