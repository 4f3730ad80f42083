/* libFuzzer target: the sharded-safetensors index. The input is the index
 * JSON; LLVMFuzzerInitialize writes two small valid shards (s1.safetensors,
 * s2.safetensors) into a private folder the index's shard names resolve in. */
#include <stdio.h>
#include <unistd.h>

#include "fuzz_common.h"

static char g_index[300];

static void write_shard(const char *dir, const char *file, const char *tensor)
{
    char path[400], header[200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int n = snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"BF16\",\"shape\":[2,8],\"data_offsets\":[0,32]}}",
                     tensor);
    while (n % 8) header[n++] = ' ';
    FILE *f = fopen(path, "wb");
    if (f == NULL) abort();
    uint8_t len[8] = {(uint8_t)n};
    uint8_t data[32];
    for (int i = 0; i < 32; i++) data[i] = (uint8_t)(i * 5 + 3);
    fwrite(len, 1, 8, f);
    fwrite(header, 1, (size_t)n, f);
    fwrite(data, 1, 32, f);
    fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *base = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof dir, "%s/memra-fuzz-index-XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(dir) == NULL) abort();
    write_shard(dir, "s1.safetensors", "a.weight");
    write_shard(dir, "s2.safetensors", "b.weight");
    snprintf(g_index, sizeof g_index, "%s/model.safetensors.index.json", dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_one(g_index, data, size);
    return 0;
}
