/*
 * lathe.c: the request reader and answer writer of lathe.h.
 */
#include "lathe.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static const char *skip_ws(const char *p, const char *end) {
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int is_hex(char c) {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hex_value(char c) {
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c - 'A' + 10;
}

/* skip_string checks the string starting at p (at its quote) and returns
 * the byte after it, or NULL when it is not a well-formed JSON string. */
static const char *skip_string(const char *p, const char *end) {
	if (p >= end || *p != '"')
		return NULL;
	for (p++; p < end; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;
		if (c != '\\')
			continue;
		if (++p >= end)
			return NULL;
		switch (*p) {
		case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
			break;
		case 'u':
			if (end - p < 5 || !is_hex(p[1]) || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]))
				return NULL;
			p += 4;
			break;
		default:
			return NULL;
		}
	}
	return NULL;
}

static const char *skip_digits(const char *p, const char *end) {
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p;
}

/* skip_number checks a number as JSON spells it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static const char *skip_number(const char *p, const char *end) {
	const char *q;
	if (p < end && *p == '-')
		p++;
	if (p >= end)
		return NULL;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		p = skip_digits(p, end);
	else
		return NULL;
	if (p < end && *p == '.') {
		q = skip_digits(p + 1, end);
		if (q == p + 1)
			return NULL;
		p = q;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		q = skip_digits(p, end);
		if (q == p)
			return NULL;
		p = q;
	}
	return p;
}

static const char *skip_literal(const char *p, const char *end, const char *word) {
	size_t n = strlen(word);
	if ((size_t)(end - p) < n || memcmp(p, word, n) != 0)
		return NULL;
	return p + n;
}

/* skip_value checks the value starting at p and returns the byte after it,
 * or NULL when it is not well-formed or nests deeper than depth allows. */
static const char *skip_value(const char *p, const char *end, int depth) {
	if (p >= end)
		return NULL;
	switch (*p) {
	case '"':
		return skip_string(p, end);
	case 't':
		return skip_literal(p, end, "true");
	case 'f':
		return skip_literal(p, end, "false");
	case 'n':
		return skip_literal(p, end, "null");
	case '[':
		if (depth <= 0)
			return NULL;
		p = skip_ws(p + 1, end);
		if (p < end && *p == ']')
			return p + 1;
		for (;;) {
			p = skip_value(p, end, depth - 1);
			if (p == NULL)
				return NULL;
			p = skip_ws(p, end);
			if (p >= end)
				return NULL;
			if (*p == ']')
				return p + 1;
			if (*p != ',')
				return NULL;
			p = skip_ws(p + 1, end);
		}
	case '{':
		if (depth <= 0)
			return NULL;
		p = skip_ws(p + 1, end);
		if (p < end && *p == '}')
			return p + 1;
		for (;;) {
			p = skip_string(p, end);
			if (p == NULL)
				return NULL;
			p = skip_ws(p, end);
			if (p >= end || *p != ':')
				return NULL;
			p = skip_value(skip_ws(p + 1, end), end, depth - 1);
			if (p == NULL)
				return NULL;
			p = skip_ws(p, end);
			if (p >= end)
				return NULL;
			if (*p == '}')
				return p + 1;
			if (*p != ',')
				return NULL;
			p = skip_ws(p + 1, end);
		}
	default:
		return skip_number(p, end);
	}
}

/* key_is says whether the JSON string at [p, end) decodes to key. */
static int key_is(const char *p, const char *end, const char *key) {
	size_t n = (size_t)(end - p), klen = strlen(key), len;
	char *s;
	int same;
	if (memchr(p, '\\', n) == NULL)
		return n == klen + 2 && memcmp(p + 1, key, klen) == 0;
	s = lathe_string((lathe_value){p, n}, &len);
	same = s != NULL && len == klen && memcmp(s, key, klen) == 0;
	free(s);
	return same;
}

/* next_member reads the member of an object at *p (just past its "{" or
 * a ","), and returns 1 with its key (the quoted string) and value, moving
 * *p past it; it returns 0 at the object's end or on a malformed member. */
static int next_member(const char **p, const char *end, lathe_value *key, lathe_value *val) {
	const char *q = skip_ws(*p, end), *k, *v;
	if (q < end && *q == ',')
		q = skip_ws(q + 1, end);
	if (q >= end || *q != '"')
		return 0;
	k = q;
	q = skip_string(q, end);
	if (q == NULL)
		return 0;
	key->p = k;
	key->n = (size_t)(q - k);
	q = skip_ws(q, end);
	if (q >= end || *q != ':')
		return 0;
	v = skip_ws(q + 1, end);
	q = skip_value(v, end, LATHE_MAX_DEPTH);
	if (q == NULL)
		return 0;
	val->p = v;
	val->n = (size_t)(q - v);
	*p = q;
	return 1;
}

int lathe_get(lathe_value obj, const char *key, lathe_value *out) {
	const char *p = obj.p, *end = obj.p + obj.n;
	lathe_value k, v;
	int found = 0;
	if (obj.n == 0 || *p != '{')
		return 0;
	p++;
	/* The last member of a name wins, as it does in Go's decoder, which
	 * checked the arguments: the tool must act on what was checked. */
	while (next_member(&p, end, &k, &v))
		if (key_is(k.p, k.p + k.n, key)) {
			*out = v;
			found = 1;
		}
	return found;
}

/* put_utf8 writes the code point c as UTF-8 at out and returns its length. */
static size_t put_utf8(char *out, unsigned long c) {
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xC0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xE0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		out[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3F));
	out[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

static unsigned long hex4(const char *p) {
	return (unsigned long)(hex_value(p[0]) << 12 | hex_value(p[1]) << 8 | hex_value(p[2]) << 4 | hex_value(p[3]));
}

char *lathe_string(lathe_value v, size_t *len) {
	const char *p = v.p, *end = v.p + v.n;
	char *s, *o;
	if (v.n < 2 || *p != '"' || skip_string(p, end) != end)
		return NULL;
	/* Decoding never makes a string longer: an escape of six bytes stands
	 * for at most three, a pair of twelve for four. */
	s = malloc(v.n);
	if (s == NULL)
		return NULL;
	o = s;
	for (p++, end--; p < end; p++) {
		if (*p != '\\') {
			*o++ = *p;
			continue;
		}
		switch (*++p) {
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			unsigned long c = hex4(p + 1);
			p += 4;
			if (c >= 0xD800 && c <= 0xDBFF && end - p >= 7 && p[1] == '\\' && p[2] == 'u') {
				unsigned long lo = hex4(p + 3);
				if (lo >= 0xDC00 && lo <= 0xDFFF) {
					c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
					p += 6;
				}
			}
			/* A surrogate left alone is not a character: U+FFFD, as Go's
			 * decoder does. */
			if (c >= 0xD800 && c <= 0xDFFF)
				c = 0xFFFD;
			o += put_utf8(o, c);
			break;
		}
		default: *o++ = *p; break; /* " \ / */
		}
	}
	*o = '\0';
	if (len != NULL)
		*len = (size_t)(o - s);
	return s;
}

int lathe_int(lathe_value v, long long *out) {
	const char *p = v.p, *end = v.p + v.n;
	int neg = 0;
	unsigned long long n = 0, limit;
	if (v.n == 0 || skip_number(p, end) != end)
		return 0;
	if (*p == '-') {
		neg = 1;
		p++;
	}
	limit = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (n > (limit - d) / 10)
			return 0;
		n = n * 10 + d;
	}
	/* A fraction of zeros is still an integer (JSON Schema says so); an
	 * exponent is refused rather than worked out. */
	if (p < end && *p == '.')
		for (p++; p < end && *p == '0'; p++)
			;
	if (p != end)
		return 0;
	*out = neg ? (long long)(0 - n) : (long long)n;
	return 1;
}

int lathe_bool(lathe_value v, int *out) {
	if (v.n == 4 && memcmp(v.p, "true", 4) == 0) {
		*out = 1;
		return 1;
	}
	if (v.n == 5 && memcmp(v.p, "false", 5) == 0) {
		*out = 0;
		return 1;
	}
	return 0;
}

static void set_err(char *err, size_t errlen, const char *msg) {
	if (errlen > 0)
		snprintf(err, errlen, "%s", msg);
}

int lathe_parse_request(lathe_request *req, char *buf, size_t len, char *err, size_t errlen) {
	const char *p, *end = buf + len;
	lathe_value k, v, protocol = {0}, action = {0}, tool = {0}, arguments = {0}, answers = {0}, context = {0}, root = {0};
	memset(req, 0, sizeof *req);
	req->buf = buf;
	req->len = len;
	p = skip_ws(buf, end);
	if (p >= end || *p != '{') {
		set_err(err, errlen, "the request is not a JSON object");
		return -1;
	}
	req->object.p = p;
	p = skip_value(p, end, LATHE_MAX_DEPTH);
	if (p == NULL) {
		set_err(err, errlen, "the request is not well-formed JSON, or nests deeper than 64 levels");
		return -1;
	}
	req->object.n = (size_t)(p - req->object.p);
	if (skip_ws(p, end) != end) {
		set_err(err, errlen, "the request has bytes after its object");
		return -1;
	}
	/* One walk over the request's members finds them all: a module pays
	 * for every loop it runs (a runtime that can stop it checks at each
	 * turn), so the helper reads the request no more often than it must. */
	p = req->object.p + 1;
	while (next_member(&p, end, &k, &v)) {
		if (key_is(k.p, k.p + k.n, "protocol"))
			protocol = v;
		else if (key_is(k.p, k.p + k.n, "action"))
			action = v;
		else if (key_is(k.p, k.p + k.n, "tool"))
			tool = v;
		else if (key_is(k.p, k.p + k.n, "arguments"))
			arguments = v;
		else if (key_is(k.p, k.p + k.n, "answers"))
			answers = v;
		else if (key_is(k.p, k.p + k.n, "context"))
			context = v;
	}
	if (protocol.n > 0 && !lathe_int(protocol, &req->protocol)) {
		set_err(err, errlen, "the request's protocol is not an integer");
		return -1;
	}
	if ((req->action = lathe_string(action, NULL)) == NULL) {
		set_err(err, errlen, "the request has no action string");
		return -1;
	}
	if (tool.n > 0 && (req->tool = lathe_string(tool, NULL)) == NULL) {
		set_err(err, errlen, "the request's tool is not a string");
		return -1;
	}
	req->arguments = (lathe_value){"{}", 2};
	if (arguments.n > 0) {
		if (*arguments.p != '{') {
			set_err(err, errlen, "the request's arguments are not an object");
			return -1;
		}
		req->arguments = arguments;
	}
	if (answers.n > 0 && *answers.p == '{')
		req->answers = answers;
	if (lathe_get(context, "root", &root) && (req->workspace = lathe_string(root, NULL)) == NULL) {
		set_err(err, errlen, "the request's context.root is not a string");
		return -1;
	}
	return 0;
}

int lathe_read_request(lathe_request *req, char *err, size_t errlen) {
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	/* One line: after the request, standard input may carry the host's
	 * answers to the tool's own requests, which are not the tool's to read
	 * here. getline reads it in chunks rather than byte by byte, and
	 * counts a NUL byte as any other, so that none cuts the line short. */
	errno = 0;
	n = getline(&buf, &cap, stdin);
	if (n < 0) {
		free(buf);
		set_err(err, errlen, errno != 0 ? "cannot read the request" : "the request is empty");
		return -1;
	}
	if ((size_t)n > LATHE_MAX_REQUEST) {
		free(buf);
		set_err(err, errlen, "the request is larger than 16 MiB");
		return -1;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (lathe_parse_request(req, buf, (size_t)n, err, errlen) != 0) {
		lathe_request_free(req);
		return -1;
	}
	return 0;
}

void lathe_request_free(lathe_request *req) {
	free(req->buf);
	free(req->action);
	free(req->tool);
	free(req->workspace);
	memset(req, 0, sizeof *req);
}

char *lathe_path(const lathe_request *req, const char *p) {
	size_t wl, pl = strlen(p);
	char *out;
	if (p[0] == '/' || req->workspace == NULL || req->workspace[0] == '\0')
		return strdup(p);
	wl = strlen(req->workspace);
	if ((out = malloc(wl + pl + 2)) == NULL)
		return NULL;
	memcpy(out, req->workspace, wl);
	out[wl] = '/';
	memcpy(out + wl + 1, p, pl + 1);
	return out;
}

/* utf8_len returns the length of the UTF-8 sequence at p (at most n bytes
 * long), or 0 when it is not one: overlong forms, surrogates and code
 * points past U+10FFFF are not. */
static size_t utf8_len(const unsigned char *p, size_t n) {
	unsigned char c = p[0], lo = 0x80, hi = 0xBF;
	size_t len, i;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return len;
}

void lathe_write_string(FILE *f, const char *s, size_t n) {
	const unsigned char *p = (const unsigned char *)s, *end = p + n, *run = p;
	size_t l;
	putc('"', f);
	while (p < end) {
		unsigned char c = *p;
		const char *esc = NULL;
		char u[8];
		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0x80 && (l = utf8_len(p, (size_t)(end - p))) > 0) {
			p += l;
			continue;
		}
		fwrite(run, 1, (size_t)(p - run), f);
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default:
			if (c < 0x20) {
				snprintf(u, sizeof u, "\\u%04x", c);
				esc = u;
			} else
				esc = "\\ufffd";
		}
		fputs(esc, f);
		run = ++p;
	}
	fwrite(run, 1, (size_t)(p - run), f);
	putc('"', f);
}

void lathe_success(const char *text, size_t n, const char *structured) {
	fputs("{\"type\":\"success\",\"content\":", stdout);
	lathe_write_string(stdout, text, n);
	if (structured != NULL) {
		fputs(",\"structured\":", stdout);
		fputs(structured, stdout);
	}
	fputs("}\n", stdout);
	fflush(stdout);
}

void lathe_error(const char *message) {
	fputs("{\"type\":\"error\",\"message\":", stdout);
	lathe_write_string(stdout, message, strlen(message));
	fputs("}\n", stdout);
	fflush(stdout);
}

void lathe_errorf(const char *format, ...) {
	char small[256], *msg = small;
	va_list ap;
	int n;
	va_start(ap, format);
	n = vsnprintf(small, sizeof small, format, ap);
	va_end(ap);
	if (n < 0) {
		lathe_error(format);
		return;
	}
	if ((size_t)n >= sizeof small && (msg = malloc((size_t)n + 1)) != NULL) {
		va_start(ap, format);
		vsnprintf(msg, (size_t)n + 1, format, ap);
		va_end(ap);
	}
	lathe_error(msg != NULL ? msg : small);
	if (msg != small)
		free(msg);
}

void lathe_ask_boolean(const char *id, const char *text, size_t n) {
	fputs("{\"type\":\"needs_input\",\"question\":{\"id\":", stdout);
	lathe_write_string(stdout, id, strlen(id));
	fputs(",\"text\":", stdout);
	lathe_write_string(stdout, text, n);
	fputs(",\"answer_type\":\"boolean\"}}\n", stdout);
	fflush(stdout);
}

#ifdef __wasm__
/* The host functions of docs/host.md, "The host function lathe.host_call".
 * A module imports them only when it calls lathe_host_call: the linker
 * drops them, and the import, from one that does not. */
__attribute__((import_module("lathe"), import_name("host_call"))) long long
lathe_import_host_call(const char *req, int req_len, char *resp, int resp_cap);
__attribute__((import_module("lathe"), import_name("host_result"))) long long
lathe_import_host_result(char *resp, int resp_cap);

/* exchange sends the request req (n bytes) through lathe.host_call and
 * returns the response, in a new buffer of *len bytes, or NULL. */
static char *exchange(const char *req, size_t n, size_t *len, char *err, size_t errlen) {
	size_t cap = 4096;
	char *buf = malloc(cap);
	long long got;
	if (buf == NULL) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	if (n > INT_MAX) {
		free(buf);
		set_err(err, errlen, "the host request is too large");
		return NULL;
	}
	got = lathe_import_host_call(req, (int)n, buf, (int)cap);
	if (got > (long long)cap && got <= (long long)LATHE_MAX_RESPONSE) {
		/* The response waits in the host for a buffer it fits. */
		char *bigger = realloc(buf, (size_t)got);
		if (bigger == NULL) {
			free(buf);
			set_err(err, errlen, "out of memory");
			return NULL;
		}
		buf = bigger;
		cap = (size_t)got;
		got = lathe_import_host_result(buf, (int)cap);
	}
	if (got < 0 || got > (long long)cap) {
		free(buf);
		set_err(err, errlen, got < 0 ? "the host refused the request's buffers" : "the host's response is too large");
		return NULL;
	}
	*len = (size_t)got;
	return buf;
}
#else
/* exchange writes the request req (n bytes) as a line on standard output,
 * and reads the host's response, the next line of standard input: the
 * host API of a VFS tool. */
static char *exchange(const char *req, size_t n, size_t *len, char *err, size_t errlen) {
	char *buf = NULL;
	size_t cap = 0;
	ssize_t got;
	if (fwrite(req, 1, n, stdout) != n || fputc('\n', stdout) == EOF || fflush(stdout) != 0) {
		set_err(err, errlen, "cannot write the host request");
		return NULL;
	}
	errno = 0;
	got = getline(&buf, &cap, stdin);
	if (got <= 0 || (size_t)got > LATHE_MAX_RESPONSE) {
		free(buf);
		set_err(err, errlen, got > 0 ? "the host's response is too large" : "the host did not answer (is context.host 1?)");
		return NULL;
	}
	if (buf[got - 1] == '\n')
		got--;
	*len = (size_t)got;
	return buf;
}
#endif

int lathe_host_call(const char *method, const char *params, lathe_response *resp, char *err, size_t errlen) {
	static long long next_id = 1;
	char *req = NULL, *buf;
	size_t reqlen = 0, len = 0;
	const char *end;
	lathe_value obj, v, e;
	FILE *f;
	memset(resp, 0, sizeof *resp);
	/* The request is written with the same escaping as an answer, so a
	 * method or params that came from a model cannot break out of it. */
	if ((f = open_memstream(&req, &reqlen)) == NULL) {
		set_err(err, errlen, "out of memory");
		return -1;
	}
	fprintf(f, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":", next_id++);
	lathe_write_string(f, method, strlen(method));
	if (params != NULL) {
		fputs(",\"params\":", f);
		fputs(params, f);
	}
	fputc('}', f);
	if (fclose(f) != 0 || req == NULL) {
		free(req);
		set_err(err, errlen, "out of memory");
		return -1;
	}
	buf = exchange(req, reqlen, &len, err, errlen);
	free(req);
	if (buf == NULL)
		return -1;
	resp->buf = buf;
	resp->len = len;
	/* The response is checked whole before anything reads it, as the
	 * request is. */
	obj.p = skip_ws(buf, buf + len);
	end = obj.p < buf + len && *obj.p == '{' ? skip_value(obj.p, buf + len, LATHE_MAX_DEPTH) : NULL;
	if (end == NULL || skip_ws(end, buf + len) != buf + len) {
		set_err(err, errlen, "the host's response is not a JSON object");
		return -1;
	}
	obj.n = (size_t)(end - obj.p);
	if (lathe_get(obj, "error", &e) && *e.p == '{') {
		if (!lathe_get(e, "code", &v) || !lathe_int(v, &resp->code) || resp->code == 0) {
			set_err(err, errlen, "the host's error has no code");
			return -1;
		}
		if (lathe_get(e, "message", &v))
			resp->message = lathe_string(v, NULL);
		if (resp->message == NULL)
			resp->message = strdup("the host refused the request");
		return 0;
	}
	if (!lathe_get(obj, "result", &resp->result)) {
		set_err(err, errlen, "the host's response has neither a result nor an error");
		return -1;
	}
	return 0;
}

void lathe_response_free(lathe_response *resp) {
	free(resp->buf);
	free(resp->message);
	memset(resp, 0, sizeof *resp);
}

/* base64_value returns the value of the base64 digit c, or -1. */
static int base64_value(unsigned char c) {
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* base64_append decodes the n bytes of standard base64 at s onto the end of
 * out (*len bytes, room for *cap) and returns 0, or -1 when s is not base64
 * or memory runs out. */
static int base64_append(const char *s, size_t n, char **out, size_t *len, size_t *cap) {
	size_t i, need = *len + n / 4 * 3 + 1;
	unsigned long acc = 0;
	int bits = 0, d;
	if (need > *cap) {
		char *grown = realloc(*out, need);
		if (grown == NULL)
			return -1;
		*out = grown;
		*cap = need;
	}
	for (i = 0; i < n && s[i] != '='; i++) {
		if ((d = base64_value((unsigned char)s[i])) < 0)
			return -1;
		acc = (acc << 6) | (unsigned long)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			(*out)[(*len)++] = (char)((acc >> bits) & 0xff);
		}
	}
	(*out)[*len] = '\0';
	return 0;
}

long long lathe_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen) {
	lathe_response resp;
	lathe_value v;
	char *params = NULL, *chunk;
	size_t plen = 0, cap = 0, n;
	int eof = 0;
	long long code;
	FILE *f;
	*data = NULL;
	*len = 0;
	while (!eof) {
		if ((f = open_memstream(&params, &plen)) == NULL) {
			set_err(err, errlen, "out of memory");
			break;
		}
		fputs("{\"path\":", f);
		lathe_write_string(f, path, strlen(path));
		fprintf(f, ",\"offset\":%zu}", *len);
		if (fclose(f) != 0 || params == NULL) {
			set_err(err, errlen, "out of memory");
			break;
		}
		if (lathe_host_call("fs/read", params, &resp, err, errlen) != 0) {
			lathe_response_free(&resp);
			break;
		}
		free(params);
		params = NULL;
		if (resp.code != 0) {
			code = resp.code;
			set_err(err, errlen, resp.message != NULL ? resp.message : "the host refused the request");
			lathe_response_free(&resp);
			free(*data);
			*data = NULL;
			*len = 0;
			return code;
		}
		chunk = NULL;
		if (!lathe_get(resp.result, "data", &v) || (chunk = lathe_string(v, &n)) == NULL ||
		    base64_append(chunk, n, data, len, &cap) != 0) {
			set_err(err, errlen, chunk == NULL ? "the host's fs/read result has no data" : "the host's data is not base64, or memory ran out");
			free(chunk);
			lathe_response_free(&resp);
			break;
		}
		free(chunk);
		/* A part that brought nothing ends the file too, so that a
		 * host that never said eof could not keep the tool looping. */
		if (!lathe_get(resp.result, "eof", &v) || !lathe_bool(v, &eof) || n == 0)
			eof = 1;
		lathe_response_free(&resp);
	}
	free(params);
	if (!eof) {
		free(*data);
		*data = NULL;
		*len = 0;
		return -1;
	}
	if (*data == NULL && (*data = calloc(1, 1)) == NULL) {
		set_err(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}
