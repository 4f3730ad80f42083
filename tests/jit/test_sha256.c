/* SHA-256 against the FIPS 180-2 appendix vectors, one-shot and in pieces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/sha256.h"
#include "test.h"

static void check_hex(const uint8_t *digest, const char *want, const char *what)
{
    char got[2 * MEMRA__SHA256_BYTES + 1];
    memra__hex(digest, MEMRA__SHA256_BYTES, got);
    printf("%-24s %s\n", what, got);
    CHECK_STR_EQ(got, want);
}

int main(void)
{
    uint8_t d[MEMRA__SHA256_BYTES];
    memra__sha256("abc", 3, d);
    check_hex(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "\"abc\"");
    memra__sha256("", 0, d);
    check_hex(d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "\"\"");
    static const char m448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    memra__sha256(m448, strlen(m448), d);
    check_hex(d, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "448-bit message");

    static const char *million = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    char *a = malloc(1000000);
    CHECK(a != NULL);
    memset(a, 'a', 1000000);
    memra__sha256(a, 1000000, d);
    check_hex(d, million, "one million 'a'");
    /* the same through updates of awkward sizes (1, 63, 64, 65, 127 bytes ...) */
    memra__sha256_ctx ctx;
    memra__sha256_init(&ctx);
    size_t done = 0, step = 1;
    while (done < 1000000) {
        size_t n = step < 1000000 - done ? step : 1000000 - done;
        memra__sha256_update(&ctx, a + done, n);
        done += n;
        step = step * 7 % 191 + 1;
    }
    memra__sha256_final(&ctx, d);
    check_hex(d, million, "one million 'a', pieces");
    free(a);

    /* padding boundaries: 55, 56, 63, 64 bytes, one-shot vs byte at a time */
    for (size_t n = 50; n <= 130; n++) {
        uint8_t buf[130], one[32], many[32];
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)(i * 31 + 7);
        memra__sha256(buf, n, one);
        memra__sha256_init(&ctx);
        for (size_t i = 0; i < n; i++) memra__sha256_update(&ctx, buf + i, 1);
        memra__sha256_final(&ctx, many);
        CHECK(memcmp(one, many, 32) == 0);
    }
    printf("ok\n");
    return 0;
}
