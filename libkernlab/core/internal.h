/* Internal helpers shared by every module of libkernlab: allocation (with a
 * fail-after hook the out-of-memory tests use), the per-thread error, owned
 * diagnostics, byte-buffer building, small file-system and string helpers.
 * Nothing here is exported from the shared library; internal non-static
 * names carry the `kl_<module>__` or `kl__` prefix. */
#ifndef KL_CORE_INTERNAL_H
#define KL_CORE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernlab/common.h"

#if defined(__GNUC__) || defined(__clang__)
#define KL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KL_PRINTF(f, a)
#endif

#define KL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- allocation --------------------------------------------------------- */
void *kl__malloc(size_t n);
void *kl__calloc(size_t count, size_t size);
void *kl__realloc(void *p, size_t n);
char *kl__strdup(const char *s);
char *kl__strndup(const char *s, size_t n);
void kl__free(void *p);
/* Make the n-th allocation from now (1-based) and every later one fail;
 * 0 turns the hook off. Returns how many allocations ran since the last
 * call, so a test can sweep every failure point. For tests only. */
long kl__alloc_fail_after(long n);

/* ---- errors ------------------------------------------------------------- */
/* Every setter returns `code` so a failure reads `return kl__error(...)`. */
int kl__error(int code, int domain, const char *fmt, ...) KL_PRINTF(3, 4);
int kl__error_at(int code, int domain, const char *path, int line, int column,
                 const char *snippet, const char *fmt, ...) KL_PRINTF(7, 8);
/* KL_DOMAIN_OS error from errno: "path: what: strerror". */
int kl__error_os(int code, const char *path, const char *what);
/* The error code for a failed open of a path: one that does not exist,
 * names a folder or crosses a file is bad input; so is one refused
 * (permissions, a read-only file system) before any work, while a refusal
 * mid_work, like any other failure, is an I/O failure. */
int kl__errno_code(int err, bool mid_work);
int kl__error_oom(void);
/* Copy a fully-formed error into this thread's last error. */
int kl__error_set(const kl_error *e);

/* An owned, located diagnostic (used where all errors are collected). */
typedef struct kl__diag {
  kl_error e; /* strings below are owned */
  long order; /* insertion order, for a stable sort */
} kl__diag;

typedef struct kl__diag_list {
  kl__diag *items;
  size_t count, cap;
  bool oom; /* an allocation failed while recording */
} kl__diag_list;

void kl__diag_add(kl__diag_list *l, int code, int domain, const char *path,
                  int line, int column, const char *snippet, const char *fmt,
                  ...) KL_PRINTF(8, 9);
void kl__diag_addv(kl__diag_list *l, int code, int domain, const char *path,
                   int line, int column, const char *snippet, const char *fmt,
                   va_list ap);
/* Sort by (line, column, order). */
void kl__diag_sort(kl__diag_list *l);
void kl__diag_clear(kl__diag_list *l);
/* Sort, hand every diagnostic to on_diag (which may be NULL; nonzero stops
 * it), and make the first the thread's last error, "(and N more errors)"
 * appended. Returns that error's code; KL_ENOMEM when recording failed;
 * 0 for an empty list. */
int kl__diag_report(kl__diag_list *l, kl_diag_fn on_diag, void *payload);
/* Line `line` of `text` with a caret under `column` ("  src\n  ^"). */
char *kl__snippet(const char *text, int line, int column);

/* A NULL-terminated list of strings (an argv): a deep copy, NULL when out
 * of memory; and its release (NULL-safe). */
char **kl__strv_dup(const char *const *v);
void kl__strv_free(char **v);
/* The strings of a NULL-ended list joined by sep ("" for an empty or NULL
 * list); NULL only when out of memory. Caller frees. */
char *kl__strv_join(char *const *v, const char *sep);

/* ---- buffers ------------------------------------------------------------ */
/* Writes to a kl_buf are checked once (buf.c): a failed one frees the
 * buffer and fails every later write, so text is written without testing
 * each call and the function ends with `return kl__buf_status(b);`. The
 * writers still return 0 or KL_ENOMEM for a caller that stops early. */
int kl__buf_status(const kl_buf *b); /* 0, or KL_ENOMEM (error set) */
/* Hand a buffer's contents over: *to is disposed and takes them; *from is
 * empty (and usable) again. */
void kl__buf_give(kl_buf *to, kl_buf *from);
int kl__buf_grow(kl_buf *b, size_t extra);
int kl__buf_put(kl_buf *b, const char *s, size_t n);
int kl__buf_puts(kl_buf *b, const char *s);
int kl__buf_putc(kl_buf *b, char c);
int kl__buf_printf(kl_buf *b, const char *fmt, ...) KL_PRINTF(2, 3);
int kl__buf_vprintf(kl_buf *b, const char *fmt, va_list ap);
/* Append `s` as a JSON string literal, quotes included; NULL as null. */
int kl__buf_json_string(kl_buf *b, const char *s);
/* The same for the n bytes at s (a NUL among them is escaped as \u0000). */
int kl__buf_json_string_n(kl_buf *b, const char *s, size_t n);
/* Take ownership of the contents (NUL-terminated, never NULL on success). */
char *kl__buf_detach(kl_buf *b);

/* ---- files -------------------------------------------------------------- */
bool kl__is_dir(const char *path);
bool kl__is_file(const char *path);
/* Read a whole file; KL_ENOTFOUND, KL_EIO (error set with the path). */
int kl__read_file(kl_buf *out, const char *path);
/* The names (not paths) of the files in `dir` ending in `suffix`, hidden
 * ones left out, sorted; free with kl__names_free. KL_ENOTFOUND or KL_EIO
 * with "dir: what: reason" when the folder cannot be read. */
int kl__list_dir(char ***names, size_t *n, const char *dir, const char *suffix,
                 const char *what);
void kl__names_free(char **names, size_t n);
/* write() all n bytes, retrying after EINTR and short writes; 0 or -1
 * (errno set). */
int kl__write_all(int fd, const char *data, size_t n);
/* Write a whole file, creating it; fails with KL_EEXISTS if it exists. */
int kl__write_new_file(const char *path, const char *data, size_t n);
/* Write a whole file through a temporary name and rename(), fsync'd: a
 * reader sees the old file or the new one. */
int kl__write_file_atomic(const char *path, const char *data, size_t n);
/* The same, with `first` (NULL: none) called on the temporary file before
 * the data is written: records/io.c's fault points tear a write there. */
int kl__write_file_atomic_with(const char *path, const char *data, size_t n,
                               void (*first)(int fd, const char *data,
                                             size_t n));
/* "a" + "b" -> "a/b"; an absolute b is kept as is. Caller frees. */
char *kl__path_join(const char *a, const char *b);
/* The path from the root for `path` (relative: to the working folder;
 * links are not resolved); NULL when out of memory or the working folder
 * cannot be told. Caller frees. */
char *kl__path_absolute(const char *path);
/* The folder part of a path ("a/b.yaml" -> "a", "b.yaml" -> "."). */
char *kl__path_dir(const char *path);
/* <bin>/../lib64 of `compiler` (a name looked up on PATH, or a path),
 * resolved; NULL when not found. */
char *kl__tool_lib_dir(const char *compiler);

/* ---- strings ------------------------------------------------------------ */
/* A C identifier: [A-Za-z_][A-Za-z0-9_]*. */
bool kl__is_ident(const char *s);
/* A fresh seed, never 0 (getrandom; the clock and pid where it fails):
 * what a bench or a run starts from when given none. */
uint64_t kl__fresh_seed(void);
/* The k-th seed derived from `base` (splitmix64; never 0): check seeds,
 * timing inputs, iterations of a run, draws of a random search. */
uint64_t kl__derive_seed(uint64_t base, uint64_t k);
/* Milliseconds on the monotonic clock (fractions included). */
double kl__now_ms(void);

/* How busy the machine was between two marks (load.c). */
typedef struct kl__load {
  bool valid;
  double busy_s, total_s; /* the machine's CPU time, busy and all */
  double worker_s;        /* the worker process's CPU time */
  double self_s;          /* this process's */
  double wall_ms;
} kl__load;
/* Other processes' CPU use, in CPUs' worth, from which the machine a
 * measurement ran on is called busy (reasons and reports name it). */
#define KL__BUSY_CPUS 0.25
/* A mark now; worker_pid <= 0: no worker to leave out. */
void kl__load_mark(kl__load *m, int worker_pid);
/* Between marks a and b: CPUs' worth of work by other processes, the CPUs
 * online, and the 1-minute load average at b. False (all 0) where it
 * cannot be known. */
bool kl__load_between(const kl__load *a, const kl__load *b, double *others_cpus,
                      double *cpus, double *loadavg);
size_t kl__edit_distance(const char *a, const char *b);
/* The candidate closest to `word` when it is close enough, else NULL. */
const char *kl__suggest(const char *word, const char *const *candidates,
                        size_t n);

/* ---- C and CUDA source (csource.c) --------------------------------------- */
/* A copy of s[0..n) with comments and (unless keep_strings) string
 * literals blanked, newlines kept; NULL when out of memory. */
char *kl__c_blank(const char *s, size_t n, bool keep_strings);
bool kl__c_ident_char(char c);
/* A kernel entry as a case spells it: an optional qualifier ("ns::"), the
 * function's name, optional template arguments ("<float, 128>"). false
 * when `entry` is not such a name; else the name's offset and length and
 * where the template arguments start (the end when there are none). */
bool kl__c_entry_split(const char *entry, size_t *name_off, size_t *name_len,
                       size_t *args_off);
bool kl__c_entry_valid(const char *entry);
/* "ns::kern" of "ns::kern<float>"; "kern" of it; NULL when out of memory. */
char *kl__c_entry_function(const char *entry);
char *kl__c_entry_name(const char *entry);
/* The entry with `prefix` before its name ("ns::klh_baseline_kern<float>")
 * or, `outer`, before its outermost qualifier ("kl_v1_ns::kern<float>"). */
int kl__c_entry_renamed(kl_buf *out, const char *entry, const char *prefix,
                        bool outer);
/* The parameter list of the definition of `entry` in blanked code; *out
 * NULL when there is none; KL_ENOMEM. */
/* Whether `text` (comments and strings not yet blanked) defines a function
 * `name` (e.g. a kernel section's own launcher, kernlab_launch). */
int kl__c_defines(bool *out, const char *text, const char *name);
int kl__c_definition_params(char **out, const char *code, const char *entry);
/* Where blanked code defines the struct (or class) NAME: `struct NAME {`,
 * `struct NAME : base {` or `typedef struct [TAG] { ... } NAME;`. *open is
 * its '{', *close its matching '}'; false when it defines none. */
bool kl__c_struct_body(const char *code, const char *name, size_t *open,
                       size_t *close);
/* The whole statement that defines struct NAME, from after the previous
 * statement (a '{', '}', ';' or directive line) to its ';'. */
bool kl__c_struct_statement(const char *code, const char *name, size_t *start,
                            size_t *end);
/* c_names.c: the names blanked code defines at its top level (functions,
 * types, tags, namespaces, variables; not keywords or main) and the macros
 * it #defines, each once. */
/* c_includes.c: each `#include "x"` of `text` (a section whose lines
 * #line names `file`) guarded so that only the first section to include x
 * (numbered `section`, > 0) includes it; lines keep their numbers. */
/* Whether `line` (n bytes, comments blanked, strings kept) is
 * `#include "x"`: then the header's name in *name, *len. */
bool kl__c_quoted_include(const char *line, size_t n, const char **name,
                          size_t *len);
int kl__c_include_once(kl_buf *out, const char *text, const char *file,
                       int section);
/* `text` with each `#include "x"` that `before` (before_len bytes) already
 * has made a comment line; how many in *dropped. */
int kl__c_include_dropped(kl_buf *out, const char *text, const char *before,
                          size_t before_len, int *dropped);
typedef struct kl__c_names {
  char **v;
  size_t n, cap;
} kl__c_names;
int kl__c_top_level_names(kl__c_names *names, kl__c_names *macros,
                          const char *code);
void kl__c_names_dispose(kl__c_names *ns);
/* The identifier that ends at `at` (spaces before `at` skipped), not
 * before `start`: its first byte, *len 0 when there is none. */
const char *kl__c_ident_before(const char *start, const char *at, size_t *len);
/* The name a type's spelling declares: "Params" of "struct Params" and of
 * "ns::Params<float>"; NULL when out of memory. */
char *kl__c_type_name(const char *spelling);
/* The definition of `entry` in blanked code: its declaration's first byte
 * (after the previous ';', '{', '}' or preprocessor line; a template's
 * `template <...>` is part of it), its '{' and one past
 * its matching '}'. KL_ENOTFOUND (no error set) when there is none. */
int kl__c_definition_span(const char *code, const char *entry, size_t *start,
                          size_t *open, size_t *end);
/* The top-level comma-separated items of text[0..n) (commas inside <>
 * and () are the items' own), each trimmed; at most max, each cut at 127
 * bytes. */
size_t kl__c_split_items(char items[][128], size_t max, const char *text,
                         size_t n);
/* The parameters of the template a declaration decl[0..n) starts with
 * (`template <typename T, int B = 4>`): for each its name when it is a
 * type parameter, else "". 0 when the declaration is no template. */
size_t kl__c_template_types(char names[][64], size_t max, const char *decl,
                            size_t n);
/* What a caller at file scope writes to call the function a demangled name
 * names: "ns::kern<float, 128>" of "void ns::kern<float, 128>(float*,
 * int)", anonymous namespaces left out; false when it does not fit in n or
 * has no parameter list. */
bool kl__c_call_name(char *out, size_t n, const char *demangled);
/* A namespace or extern "C" block: where its head ("namespace ns") starts
 * and where its '{' is. */
typedef struct kl__c_scope {
  size_t head, brace;
} kl__c_scope;
/* How many such blocks are open at byte `at` of blanked code, outermost
 * first in out[0..max). */
int kl__c_scopes(const char *clean, size_t at, kl__c_scope *out, int max);

/* ---- hashing (sha256.c) ---------------------------------------------------
 */
typedef struct kl__sha256 {
  uint32_t state[8];
  uint64_t bytes;
  unsigned char buf[64];
  size_t used;
} kl__sha256;
void kl__sha256_init(kl__sha256 *h);
void kl__sha256_update(kl__sha256 *h, const void *data, size_t n);
/* Finish and write 64 hex digits and a NUL. */
void kl__sha256_hex(kl__sha256 *h, char out[65]);

/* ---- processes (process.c) ------------------------------------------------
 */
typedef struct kl__run_result {
  int exit_code;  /* -1 when killed by a signal */
  int signal;     /* the signal, or 0 */
  bool timed_out; /* killed at the time limit */
  kl_buf output;  /* stdout and stderr together, capped (stdout only when
                     kl__run_extras.errors is given) */
  bool truncated; /* output reached max_output */
} kl__run_result;
/* Extras for kl__run_io: bytes for the child's standard input (then
 * closed; /dev/null without), a buffer for its standard error apart from
 * its output (capped like it), "NAME=VALUE" entries added to its
 * environment, and `inherit`: the child shares our standard input, output
 * and error (nothing captured; no time limit). */
typedef struct kl__run_io {
  const char *input;
  size_t input_len;
  kl_buf *errors;
  const char *const *env;
  bool inherit;
  /* run it in this sandbox (core/sandbox.h): its environment replaces
   * ours and `env`; its folder is the working folder unless `cwd` says */
  const struct kl__sandbox *sandbox;
} kl__run_extras;
/* Run argv[0] (looked up in PATH) with argv, in `cwd` (NULL: here), killing
 * its process group after timeout_ms (0: no limit). A program that cannot
 * be started is KL_ENOTFOUND; a failing one is 0 with exit_code set. The
 * caller disposes res->output. */
int kl__run(kl__run_result *res, const char *const *argv, const char *cwd,
            int timeout_ms, size_t max_output);
/* kl__run with standard input and a separate standard error. */
int kl__run_io(kl__run_result *res, const char *const *argv, const char *cwd,
               int timeout_ms, size_t max_output, const kl__run_extras *io);
/* mkdir -p */
int kl__mkdir_p(const char *path);
/* Where compiled plugins go when no option says: $KERNLAB_CACHE_DIR,
 * $XDG_CACHE_HOME/kernlab, ~/.cache/kernlab, else /tmp/kernlab-cache-UID
 * (appended to out, not created). KL_ENOMEM. */
int kl__cache_dir_default(kl_buf *out);

/* ---- growable arrays (mem.c)
 * ---------------------------------------------------- */
/* Room for `need` items of `size` bytes in the array *items (a T **) of
 * capacity *cap: it grows by half again, to at least 8, and never to a
 * byte count that overflows; false when out of memory (the array as it
 * was, no error set). A capacity of 0 for an array allocated elsewhere is
 * safe (it is reallocated to `need`). Every growing array of the library
 * uses it, through KL__GROW, which is 0 or KL_ENOMEM with the error set:
 *     if ((rc = KL__GROW(d->fired, d->cap_fired, d->nfired + 1)) < 0) ... */
bool kl__array_reserve(void *items, size_t *cap, size_t need, size_t size);
#define KL__GROW(items, cap, need)                                             \
  (kl__array_reserve(&(items), &(cap), (need), sizeof(*(items)))               \
       ? 0                                                                     \
       : kl__error_oom())

/* ---- versioned structs (util.c)
 * ---------------------------------------------- */
/* Options structs start with `unsigned version`; sizes[v] is how many bytes
 * version v of the struct has (sizes[0] is 0; the last is the current
 * sizeof). kl__options_init writes the defaults of the fields version
 * `version` knows and no byte past them (an older caller's smaller struct
 * is never overrun); kl__options_take copies what a caller's struct of its
 * version holds over a full struct of defaults. KL_EINVALID for a version
 * this library does not know. */
int kl__options_init(void *opts, const void *defaults, unsigned version,
                     const size_t *sizes, size_t nsizes, const char *what);
int kl__options_take(void *full, const void *given, const size_t *sizes,
                     size_t nsizes, const char *what);
/* An options struct's pair, from its defaults macro and its sizes table:
 * the public init (kl_x_options_init) and the library's taker
 * (kl__x_options_take, declared in its module's internal header, or atop
 * the one file of a module that has none). One definition for all of
 * them. */
#define KL__OPTIONS_FUNCTIONS(type, init_fn, take_fn, defaults_init, sizes)    \
  int init_fn(type *opts, unsigned version) {                                  \
    const type defaults = defaults_init;                                       \
    return kl__options_init(opts, &defaults, version, sizes,                   \
                            KL_ARRAY_SIZE(sizes), #type);                      \
  }                                                                            \
  int take_fn(type *full, const type *given) {                                 \
    const type defaults = defaults_init;                                       \
    *full = defaults;                                                          \
    return kl__options_take(full, given, sizes, KL_ARRAY_SIZE(sizes), #type);  \
  }
/* Result structs a caller allocates start with `size_t size`, the caller's
 * sizeof (its _INIT macro sets it): *out gets the fields of *full past the
 * size field, up to the smaller of the two sizes; out->size is kept (a
 * newer caller's fields past full_size are left as its _INIT made them).
 * KL_EINVALID for a size below min_size, the struct's first version's: a
 * size never set, or owned pointers that would be dropped. */
int kl__result_give(void *out, const void *full, size_t full_size,
                    size_t min_size, const char *what);
/* A result struct's first version's size, for min_size: through the last
 * field it had then, named once at the call. Never sizeof(T): a field added
 * later would raise the minimum and refuse every caller built before it. */
#define KL__SIZE_THROUGH(T, field)                                             \
  (offsetof(T, field) + sizeof(((T *)0)->field))
/* ---- secrets (secrets.c)
 * ----------------------------------------------------- */
/* A value kernlab knows to be secret (an API key it read, a webhook URL:
 * its token parts too). Values under 8 characters are ignored. */
void kl__secret_add(const char *value);
/* Does an environment variable's name say its value is a secret
 * (*_API_KEY, *_KEY, *TOKEN*, *SECRET*, *PASSWORD*, *WEBHOOK* ...)? Such
 * values are secrets too, found in the environment on first use. */
bool kl__secret_name(const char *name);
/* Replace every known secret in b with "[redacted]", as it is and as it
 * reads inside a JSON string. KL_ENOMEM. */
int kl__redact(kl_buf *b);
/* The same on a NUL-terminated string of capacity cap (cut to fit); empty
 * when out of memory. */
void kl__redact_inplace(char *s, size_t cap);
/* A redacted copy (caller frees); NULL when s is or out of memory. */
char *kl__redact_dup(const char *s);
/* Once per process: blank the secrets' values in the environment block
 * /proc/PID/environ shows (getenv still finds them). */
void kl__secrets_hide_environ(void);

#endif /* KL_CORE_INTERNAL_H */
