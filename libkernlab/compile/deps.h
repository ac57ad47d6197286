/* The files a cached plugin's build read besides its generated source
 * (deps.c): the headers its translation unit included from the case's
 * target.include folders, and the files of target.libs. Their bytes name
 * the cache entry, so that a header or a library rebuilt in place is never
 * served from the cache. */
#ifndef KL_COMPILE_DEPS_H
#define KL_COMPILE_DEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "../core/internal.h"

typedef struct kl__deps {
  char **paths; /* resolved, each once, in the order first seen */
  size_t n;
} kl__deps;

void kl__deps_dispose(kl__deps *d);

/* Add path as given, unless it leads under `skip_dir` (a resolved folder,
 * or NULL) or is already there. A path that does not lead anywhere is
 * kept: its absence is part of the fingerprint. */
int kl__deps_add(kl__deps *d, const char *path, const char *skip_dir);

/* The prerequisites of the first rule of a make rule file as compilers
 * write it (-MMD -MF: "target: dep dep \ <newline> dep", spaces escaped
 * as "\ ", '$' as "$$"), less `skip_file` (the generated source) and
 * relative names, each given to kl__deps_add. */
int kl__deps_from_make(kl__deps *d, const char *rule, const char *skip_file,
                       const char *skip_dir);

/* The list kept beside a cache entry (one path a line): *found = false and
 * an empty list when there is none. */
int kl__deps_read(kl__deps *d, const char *path, bool *found);
int kl__deps_write(const kl__deps *d, const char *path);

/* Fold the files into h: each path and where it leads (realpath), then
 * its bytes (a file up to 4 MiB), or its size, modification time and
 * inode (a larger one: a library), or a mark that it is missing. */
int kl__deps_hash(kl__sha256 *h, const kl__deps *d);

/* false when a file was modified at or after `since` (CLOCK_REALTIME_COARSE,
 * the clock file times come from): the build that started then may have
 * read it before or after the change, so its result names neither. */
bool kl__deps_settled(const kl__deps *d, const struct timespec *since);

#endif
