/* libFuzzer target: the safetensors reader and its strict JSON parser. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_one("fuzz.safetensors", data, size);
    return 0;
}
