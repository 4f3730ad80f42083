/* Several processes compile the same key at the same moment into one fresh
 * cache folder: all succeed with identical bytes, the entry verifies, and no
 * temporary file is left behind. */
#include <dirent.h>
#include <sys/wait.h>

#include "jit/sha256.h"
#include "jit_test.h"

#define N_PROC 3

static void child(int go_fd, int out_fd)
{
    char c;
    while (read(go_fd, &c, 1) > 0) { /* wait until the parent closes the pipe */
    }
    memra__jit *jit = NULL;
    CHECK_OK(memra__jit_create(&jit));
    memra__jit_result r;
    CHECK_OK(memra__jit_compile(jit, "race", jit_test_src_scale, NULL, 0, "sm_90a", 0, &r));
    uint8_t rec[1 + 32];
    rec[0] = (uint8_t)r.origin;
    memra__sha256(r.image, r.size, rec + 1);
    CHECK(write(out_fd, rec, sizeof rec) == (ssize_t)sizeof rec);
    memra__jit_destroy(jit);
    fflush(stdout);
    _exit(0); /* not exit(): the parent's atexit cleanup must not run here */
}

int main(void)
{
    const char *dir = jit_test_cache_dir();
    memra__jit_destroy(jit_test_open());
    int go[2], out[N_PROC][2];
    CHECK(pipe(go) == 0);
    pid_t pids[N_PROC];
    for (int i = 0; i < N_PROC; i++) {
        CHECK(pipe(out[i]) == 0);
        fflush(stdout);
        pids[i] = fork();
        CHECK(pids[i] >= 0);
        if (pids[i] == 0) {
            close(go[1]);
            close(out[i][0]);
            child(go[0], out[i][1]);
        }
        close(out[i][1]);
    }
    close(go[0]);
    close(go[1]); /* start */
    uint8_t rec[N_PROC][33];
    int by_origin[3] = {0, 0, 0};
    for (int i = 0; i < N_PROC; i++) {
        int status = 0;
        CHECK(waitpid(pids[i], &status, 0) == pids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(read(out[i][0], rec[i], sizeof rec[i]) == (ssize_t)sizeof rec[i]);
        close(out[i][0]);
        CHECK(rec[i][0] <= 2);
        by_origin[rec[i][0]]++;
        char hex[65];
        memra__hex(rec[i] + 1, 32, hex);
        printf("process %d: %s, image sha256 %.16s\n", i, memra__jit_origin_str((memra__jit_origin)rec[i][0]), hex);
        CHECK(memcmp(rec[i] + 1, rec[0] + 1, 32) == 0);
    }
    printf("origins: nvrtc %d, disk %d\n", by_origin[MEMRA__JIT_ORIGIN_NVRTC], by_origin[MEMRA__JIT_ORIGIN_DISK]);
    CHECK(by_origin[MEMRA__JIT_ORIGIN_NVRTC] >= 1);

    /* one verified entry, no temporary files */
    char vdir[700];
    snprintf(vdir, sizeof vdir, "%s/v%u", dir, MEMRA__JIT_FORMAT_VERSION);
    DIR *dp = opendir(vdir);
    CHECK(dp != NULL);
    int entries = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        if (de->d_name[0] == '.') continue;
        printf("  %s\n", de->d_name);
        CHECK(strstr(de->d_name, ".tmp.") == NULL);
        if (strstr(de->d_name, ".cubin") != NULL) {
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", vdir, de->d_name);
            size_t n;
            uint8_t *f = jit_test_read_file(p, &n);
            CHECK(f != NULL && n > MEMRA__JIT_HEADER_BYTES);
            uint8_t sum[32];
            memra__sha256(f + MEMRA__JIT_HEADER_BYTES, n - MEMRA__JIT_HEADER_BYTES, sum);
            CHECK(memcmp(sum, rec[0] + 1, 32) == 0);
            CHECK(memra__jit_entry_check(f, n, f + 32, "sm_90a") == NULL);
            free(f);
            entries++;
        }
    }
    closedir(dp);
    CHECK_INT_EQ(entries, 1);
    printf("ok\n");
    return 0;
}
