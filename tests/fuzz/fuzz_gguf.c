/* libFuzzer target: the GGUF reader (memra_file_open_memory on "fuzz.gguf"). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_one("fuzz.gguf", data, size);
    return 0;
}
