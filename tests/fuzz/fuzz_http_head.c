/*
 * fuzz_http_head: cc_http_head_check (sys/http_front.h), the judge of every
 * raw HTTP request head cc-api's front reads before libmicrohttpd sees a
 * byte. The first 4 input bytes pick the limits; the rest is what the
 * client sent. Checked, against an independent scan of the same bytes:
 *   - the verdict is one of the documented statuses, with a code and a
 *     message exactly when it is a refusal, and is the same when asked twice;
 *   - an accepted head (200) ends in a blank line within max_head_bytes, has
 *     a well-formed request line whose method is reported, at most
 *     max_headers header lines, each with a colon after a non-empty token
 *     name and no folding, no control byte or bare CR, at most one
 *     Content-Length, all digits (so never "-1") and <= max_body, and not
 *     both Content-Length and Transfer-Encoding; its X-Request-Id, if
 *     reported, is [A-Za-z0-9._-]{1,64};
 *   - bytes after a verdict do not change it, and a prefix of the input is
 *     judged either incomplete or exactly as the whole (lines are judged in
 *     order, and a refusal is final).
 */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "sys/http_front.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool same_verdict(const struct cc_http_head_verdict *a, const struct cc_http_head_verdict *b)
{
	return a->status == b->status && a->code == b->code && a->message == b->message &&
	       strcmp(a->method, b->method) == 0 && strcmp(a->request_id, b->request_id) == 0;
}

/* Next line of buf[pos..len): its length without the line end; false when no LF. */
static bool next_line(const char *buf, size_t len, size_t *pos, const char **line, size_t *n)
{
	const char *lf = memchr(buf + *pos, '\n', len - *pos);

	if (!lf)
		return false;
	*line = buf + *pos;
	*n = (size_t)(lf - *line);
	if (*n > 0 && (*line)[*n - 1] == '\r')
		(*n)--;
	*pos = (size_t)(lf - buf) + 1;
	return true;
}

/* What an accepted head must be, scanned independently of the judge. */
static void check_accepted(const char *buf, size_t len, const struct cc_http_head_limits *lim,
			   const struct cc_http_head_verdict *v)
{
	size_t pos = 0, n, sp1, sp2, end = 0;
	const char *line;
	unsigned headers = 0, content_length = 0;
	bool transfer_encoding = false, ended = false;

	FUZZ_ASSERT(next_line(buf, len, &pos, &line, &n));
	if (n == 0) /* one empty line before the request line is ignored */
		FUZZ_ASSERT(next_line(buf, len, &pos, &line, &n));
	FUZZ_ASSERT(memchr(line, '\r', n) == NULL);
	for (sp1 = 0; sp1 < n && line[sp1] != ' '; sp1++)
		FUZZ_ASSERT(is_tchar((unsigned char)line[sp1]));
	FUZZ_ASSERT(sp1 >= 1 && sp1 < n && sp1 < sizeof(v->method));
	FUZZ_ASSERT(strlen(v->method) == sp1 && memcmp(v->method, line, sp1) == 0);
	for (sp2 = sp1 + 1; sp2 < n && line[sp2] != ' '; sp2++)
		FUZZ_ASSERT(line[sp2] != '\0');
	FUZZ_ASSERT(sp2 > sp1 + 1 && n - sp2 - 1 == 8);
	FUZZ_ASSERT(memcmp(line + sp2 + 1, "HTTP/1.1", 8) == 0 || memcmp(line + sp2 + 1, "HTTP/1.0", 8) == 0);

	while (next_line(buf, len, &pos, &line, &n)) {
		const char *colon;
		size_t name_len, vs, ve;

		FUZZ_ASSERT(memchr(line, '\r', n) == NULL);
		if (n == 0) {
			ended = true;
			end = pos;
			break;
		}
		headers++;
		colon = memchr(line, ':', n);
		FUZZ_ASSERT(colon != NULL);
		name_len = (size_t)(colon - line);
		FUZZ_ASSERT(name_len >= 1);
		for (size_t i = 0; i < name_len; i++)
			FUZZ_ASSERT(is_tchar((unsigned char)line[i]));
		for (size_t i = name_len + 1; i < n; i++)
			FUZZ_ASSERT(((unsigned char)line[i] >= 0x20 || line[i] == '\t') && line[i] != 0x7f);
		vs = name_len + 1;
		while (vs < n && (line[vs] == ' ' || line[vs] == '\t'))
			vs++;
		ve = n;
		while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
			ve--;
		if (name_len == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
			uint64_t value = 0;

			content_length++;
			FUZZ_ASSERT(ve > vs);
			for (size_t i = vs; i < ve; i++) {
				FUZZ_ASSERT(line[i] >= '0' && line[i] <= '9'); /* no "-1", no "+1", no " 1 2" */
				FUZZ_ASSERT(value <= lim->max_body);
				value = value * 10 + (uint64_t)(line[i] - '0');
			}
			FUZZ_ASSERT(value <= lim->max_body);
		}
		if (name_len == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0)
			transfer_encoding = true;
	}
	FUZZ_ASSERT(ended && end <= lim->max_head_bytes);
	FUZZ_ASSERT(headers <= lim->max_headers);
	FUZZ_ASSERT(content_length <= 1 && !(content_length && transfer_encoding));
	for (const char *p = v->request_id; *p; p++)
		FUZZ_ASSERT(is_tchar((unsigned char)*p) && !strchr("!#$%&'*+^`|~", *p));
	FUZZ_ASSERT(strlen(v->request_id) <= CC_HTTP_FRONT_REQUEST_ID_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t bodies[8] = { 0, 1, 9, 100, 1024, 1 << 20, 1u << 31, 99999999999ull };
	struct cc_http_head_limits lim;
	struct cc_http_head_verdict v, again, part;
	const char *buf;
	size_t len, cut;

	if (size < 4)
		return 0;
	/* The limits: any head size up to 4 KiB, up to 63 lines, a body cap from the table. */
	lim.max_head_bytes = 1 + ((size_t)data[0] | (size_t)(data[1] & 0x0f) << 8);
	lim.max_headers = data[2] & 0x3f;
	lim.max_body = bodies[data[3] & 7];
	buf = (const char *)data + 4;
	len = size - 4;

	cc_http_head_check(buf, len, &lim, &v);
	cc_http_head_check(buf, len, &lim, &again);
	FUZZ_ASSERT(same_verdict(&v, &again));
	FUZZ_ASSERT(memchr(v.method, '\0', sizeof(v.method)) && memchr(v.request_id, '\0', sizeof(v.request_id)));
	switch (v.status) {
	case 0:
	case 200:
		FUZZ_ASSERT(v.code == NULL && v.message == NULL);
		break;
	case 400:
	case 413:
	case 431:
	case 505:
		FUZZ_ASSERT(v.code && *v.code && v.message && *v.message);
		break;
	default:
		FUZZ_ASSERT(!"a status cc_http_head_check does not document");
	}
	if (v.status == 200)
		check_accepted(buf, len, &lim, &v);
	if (v.status == 0)
		FUZZ_ASSERT(len < lim.max_head_bytes); /* a head that filled the cap is judged */

	/* A prefix: incomplete, or judged exactly as the whole. */
	cut = len / 2 + (len ? data[1] >> 4 : 0) % (len / 2 + 1);
	if (cut <= len) {
		cc_http_head_check(buf, cut, &lim, &part);
		FUZZ_ASSERT(part.status == 0 || same_verdict(&part, &v));
		if (part.status != 0)
			FUZZ_ASSERT(v.status != 0);
	}
	return 0;
}
