/*
 * word_count: a small tool for the benchmarks and the tests, in C with
 * lathe.h. It counts the words, lines and bytes of its argument "text".
 */
#include "lathe.h"

#include <stdlib.h>
#include <string.h>

static const char schema[] =
	"{\"tools\":[{\"name\":\"word_count\",\"summary\":\"Count words.\","
	"\"description\":\"Counts the words, lines and bytes of a text.\","
	"\"parameters\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
	"\"required\":[\"text\"],\"additionalProperties\":false},"
	"\"output_schema\":{\"type\":\"object\",\"properties\":{\"words\":{\"type\":\"integer\"},"
	"\"lines\":{\"type\":\"integer\"},\"bytes\":{\"type\":\"integer\"}}},"
	"\"annotations\":{\"readOnlyHint\":true}}]}\n";

static int is_space(char c) {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int main(void) {
	lathe_request req;
	lathe_value v = {0};
	char err[256], text[64], structured[128];
	char *s;
	size_t n, i, words = 0, lines = 0;
	int in_word = 0;
	if (lathe_read_request(&req, err, sizeof err) != 0) {
		lathe_error(err);
		return 1;
	}
	if (strcmp(req.action, "schema") == 0) {
		fputs(schema, stdout);
	} else if (strcmp(req.action, "run") != 0) {
		lathe_errorf("the action %s is not supported", req.action);
	} else if (!lathe_get(req.arguments, "text", &v) || (s = lathe_string(v, &n)) == NULL) {
		lathe_error("the argument text is missing or not a string");
	} else {
		for (i = 0; i < n; i++) {
			if (s[i] == '\n')
				lines++;
			if (is_space(s[i]))
				in_word = 0;
			else if (!in_word) {
				in_word = 1;
				words++;
			}
		}
		free(s);
		snprintf(text, sizeof text, "%zu words", words);
		snprintf(structured, sizeof structured, "{\"words\":%zu,\"lines\":%zu,\"bytes\":%zu}", words, lines, n);
		lathe_success(text, strlen(text), structured);
	}
	lathe_request_free(&req);
	return fflush(stdout) == 0 ? 0 : 1;
}
