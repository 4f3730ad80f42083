/* A small JSON reader for the receipts the `memra` program reads back
 * (`memra bench --compare OLD.json`): the whole text into a tree of nodes.
 *
 *     tool_json *doc = tool_json_parse(text, len, err, sizeof err);   // NULL: err says where
 *     const tool_json *shapes = tool_json_get(doc, "shapes");         // NULL when absent
 *     for (size_t i = 0; i < tool_json_len(shapes); i++) ...tool_json_at(shapes, i)...
 *     tool_json_free(doc);
 *
 * Strings keep their escapes decoded for \" \\ \/ \b \f \n \r \t; \u escapes
 * become '?' (receipt keys and the values read here are ASCII). Depth is
 * limited to 64. */
#ifndef MEMRA_TOOLS_TOOL_JSON_H
#define MEMRA_TOOLS_TOOL_JSON_H

#include <stddef.h>

typedef enum tool_json_type {
    TOOL_JSON_NULL,
    TOOL_JSON_BOOL,
    TOOL_JSON_NUMBER,
    TOOL_JSON_STRING,
    TOOL_JSON_ARRAY,
    TOOL_JSON_OBJECT
} tool_json_type;

typedef struct tool_json {
    tool_json_type type;
    double num;              /* NUMBER, BOOL (0/1) */
    char *str;               /* STRING */
    char *key;               /* the member's name inside an OBJECT */
    struct tool_json *kids;  /* ARRAY / OBJECT members */
    size_t n, cap;
} tool_json;

tool_json *tool_json_parse(const char *text, size_t len, char *err, size_t errlen);
void tool_json_free(tool_json *j);
/* An object's member by name (NULL when j is not an object or has none). */
const tool_json *tool_json_get(const tool_json *j, const char *key);
size_t tool_json_len(const tool_json *j); /* members of an array/object, else 0 */
const tool_json *tool_json_at(const tool_json *j, size_t i);
/* The string / number of j, or def when j is NULL or of another type. */
const char *tool_json_str_or(const tool_json *j, const char *def);
double tool_json_num_or(const tool_json *j, double def);

#endif
