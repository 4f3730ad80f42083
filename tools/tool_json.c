/* A small JSON reader (tool_json.h). */
#include "tools/tool_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *p, *end, *start;
    char *err;
    size_t errlen;
    int failed;
} parser;

static void fail(parser *ps, const char *what)
{
    if (!ps->failed) snprintf(ps->err, ps->errlen, "byte %zu: %s", (size_t)(ps->p - ps->start), what);
    ps->failed = 1;
}

static void ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t')) ps->p++;
}

static char *string(parser *ps)
{
    ps->p++; /* the opening quote */
    const char *s = ps->p;
    size_t n = 0;
    while (ps->p < ps->end && *ps->p != '"') {
        if (*ps->p == '\\') ps->p++;
        ps->p++;
        n++;
    }
    if (ps->p >= ps->end) {
        fail(ps, "an unterminated string");
        return NULL;
    }
    char *out = malloc(n + 1), *o = out;
    if (out == NULL) {
        fail(ps, "out of memory");
        return NULL;
    }
    for (const char *q = s; q < ps->p; q++) {
        if (*q != '\\') {
            *o++ = *q;
            continue;
        }
        q++;
        switch (*q) {
        case 'n': *o++ = '\n'; break;
        case 't': *o++ = '\t'; break;
        case 'r': *o++ = '\r'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'u': *o++ = '?'; q += (ps->p - q > 4) ? 4 : 0; break;
        default: *o++ = *q; break;
        }
    }
    *o = '\0';
    ps->p++; /* the closing quote */
    return out;
}

static void value(parser *ps, tool_json *j, int depth);

static tool_json *push(parser *ps, tool_json *j)
{
    if (j->n == j->cap) {
        const size_t cap = j->cap ? 2 * j->cap : 8;
        tool_json *k = realloc(j->kids, cap * sizeof *k);
        if (k == NULL) {
            fail(ps, "out of memory");
            return NULL;
        }
        j->kids = k;
        j->cap = cap;
    }
    tool_json *k = &j->kids[j->n++];
    memset(k, 0, sizeof *k);
    return k;
}

static void container(parser *ps, tool_json *j, int depth, int obj)
{
    j->type = obj ? TOOL_JSON_OBJECT : TOOL_JSON_ARRAY;
    const char close = obj ? '}' : ']';
    ps->p++;
    ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return;
    }
    while (!ps->failed) {
        ws(ps);
        tool_json *k = push(ps, j);
        if (k == NULL) return;
        if (obj) {
            if (ps->p >= ps->end || *ps->p != '"') { fail(ps, "a member name was expected"); return; }
            k->key = string(ps);
            ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') { fail(ps, "':' was expected"); return; }
            ps->p++;
        }
        value(ps, k, depth + 1);
        ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return;
        }
        { fail(ps, obj ? "',' or '}' was expected" : "',' or ']' was expected"); return; }
    }
}

static void value(parser *ps, tool_json *j, int depth)
{
    ws(ps);
    if (depth > 64) { fail(ps, "nested deeper than 64"); return; }
    if (ps->p >= ps->end) { fail(ps, "a value was expected"); return; }
    const char c = *ps->p;
    if (c == '{' || c == '[') { container(ps, j, depth, c == '{'); return; }
    if (c == '"') {
        j->type = TOOL_JSON_STRING;
        j->str = string(ps);
        return;
    }
    static const struct {
        const char *word;
        tool_json_type type;
        double v;
    } k_words[] = {{"null", TOOL_JSON_NULL, 0}, {"true", TOOL_JSON_BOOL, 1}, {"false", TOOL_JSON_BOOL, 0}};
    for (size_t i = 0; i < 3; i++) {
        const size_t l = strlen(k_words[i].word);
        if ((size_t)(ps->end - ps->p) >= l && memcmp(ps->p, k_words[i].word, l) == 0) {
            j->type = k_words[i].type;
            j->num = k_words[i].v;
            ps->p += l;
            return;
        }
    }
    char buf[64];
    size_t n = 0;
    while (ps->p + n < ps->end && n < sizeof buf - 1 && strchr("+-0123456789.eE", ps->p[n])) n++;
    memcpy(buf, ps->p, n);
    buf[n] = '\0';
    char *e = NULL;
    j->num = strtod(buf, &e);
    if (n == 0 || e != buf + n) { fail(ps, "not a JSON value"); return; }
    j->type = TOOL_JSON_NUMBER;
    ps->p += n;
}

static void release(tool_json *j)
{
    for (size_t i = 0; i < j->n; i++) release(&j->kids[i]);
    free(j->kids);
    free(j->str);
    free(j->key);
}

void tool_json_free(tool_json *j)
{
    if (j == NULL) return;
    release(j);
    free(j);
}

tool_json *tool_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    parser ps = {.p = text, .end = text + len, .start = text, .err = err, .errlen = errlen};
    tool_json *j = calloc(1, sizeof *j);
    if (j == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    value(&ps, j, 0);
    ws(&ps);
    if (!ps.failed && ps.p != ps.end) fail(&ps, "text after the JSON value");
    if (ps.failed) {
        tool_json_free(j);
        return NULL;
    }
    return j;
}

const tool_json *tool_json_get(const tool_json *j, const char *key)
{
    if (j == NULL || j->type != TOOL_JSON_OBJECT) return NULL;
    for (size_t i = 0; i < j->n; i++)
        if (j->kids[i].key && strcmp(j->kids[i].key, key) == 0) return &j->kids[i];
    return NULL;
}

size_t tool_json_len(const tool_json *j)
{
    return j != NULL && (j->type == TOOL_JSON_ARRAY || j->type == TOOL_JSON_OBJECT) ? j->n : 0;
}

const tool_json *tool_json_at(const tool_json *j, size_t i) { return i < tool_json_len(j) ? &j->kids[i] : NULL; }

const char *tool_json_str_or(const tool_json *j, const char *def)
{
    return j != NULL && j->type == TOOL_JSON_STRING && j->str ? j->str : def;
}

double tool_json_num_or(const tool_json *j, double def)
{
    return j != NULL && j->type == TOOL_JSON_NUMBER ? j->num : def;
}
