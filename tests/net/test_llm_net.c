/* The HTTP providers against fake Anthropic and OpenAI-compatible servers
 * (tests/net/fake_llm.py, a real HTTP server on loopback, started here):
 * success with the prompt-cache field sent and usage parsed, 429 with
 * Retry-After then success, 500 twice then success, 529 overloaded, a
 * timeout, a reply cut by the token limit and continued, malformed JSON,
 * an empty reply, a refused request, a body too large, and an API key that
 * never shows in an error or a recorded exchange, even when the server
 * echoes it. Label net;
 * skipped without python3 or libcurl. */
#include <json-c/json.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"

#define KEY_A "sk-ant-test-9f2c1d7e5b3a4f60SECRET"
#define KEY_O "sk-test-openai-77aa11bb22cc33ddSECRET"

static pid_t server_pid;
static int port;
static char log_path[256];

static int start_server(void **state) {
  (void)state;
  if (!kl_transport_curl() || system("python3 -c '' 2>/dev/null") != 0)
    return 0; /* each test skips */
  setenv("ANTHROPIC_API_KEY", KEY_A, 1);
  setenv("OPENAI_API_KEY", KEY_O, 1);
  unsetenv("KL_LLM_PROVIDER");
  unsetenv("KL_LLM_MODEL");
  unsetenv("KL_LLM_BASE_URL");
  snprintf(log_path, sizeof(log_path), "/tmp/kl-fake-llm-%d.jsonl",
           (int)getpid());
  remove(log_path);
  int fd[2];
  if (pipe(fd) != 0) return -1;
  server_pid = fork();
  if (server_pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    execlp("python3", "python3", KL_SOURCE_DIR "/tests/net/fake_llm.py",
           log_path, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  FILE *f = fdopen(fd[0], "r");
  char line[64] = "";
  if (!f || !fgets(line, sizeof(line), f) ||
      sscanf(line, "PORT %d", &port) != 1)
    return -1;
  return 0; /* keep f open: the server's stdout */
}

static int stop_server(void **state) {
  (void)state;
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
  }
  remove(log_path);
  return 0;
}

static kl_llm *client(const char *api, const char *scenario) {
  if (!port) skip();
  char url[256];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s/%s%s", port, api, scenario,
           strcmp(api, "openai") == 0 ? "/v1" : "");
  kl_llm_config cfg = KL_LLM_CONFIG_INIT;
  cfg.provider = api;
  cfg.model =
      strcmp(api, "anthropic") == 0 ? "claude-sonnet-4-20250514" : "gpt-4o";
  cfg.base_url = url;
  cfg.backoff_s = 0.05;
  cfg.backoff_max_s = 1;
  cfg.timeout_ms = 5000;
  kl_llm *l;
  assert_int_equal(kl_llm_create(&l, &cfg), 0);
  return l;
}

static void no_key_in(const char *s) {
  if (s && (strstr(s, KEY_A) || strstr(s, KEY_O) || strstr(s, "SECRET")))
    fail_msg("an API key leaked: %s", s);
}

static int complete(kl_llm *l, kl_buf *reply, kl_llm_usage *u) {
  int rc = kl_llm_complete(l, "SYSTEM BLOCK", "USER BLOCK", reply, u);
  if (rc < 0) no_key_in(kl_error_last()->message);
  no_key_in(reply->ptr);
  return rc;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The server's record of the requests to one scenario. */
static int requests_to(const char *api, const char *scenario,
                       json_object **last) {
  char want[128];
  snprintf(want, sizeof(want), "/%s/%s/", api, scenario);
  FILE *f = fopen(log_path, "r");
  char line[1 << 16];
  int n = 0;
  while (f && fgets(line, sizeof(line), f)) {
    json_object *o = json_tokener_parse(line), *p;
    if (o && json_object_object_get_ex(o, "path", &p) &&
        strncmp(json_object_get_string(p), want, strlen(want)) == 0) {
      n++;
      if (last) {
        json_object_put(*last);
        *last = json_object_get(o);
      }
    }
    json_object_put(o);
  }
  if (f) fclose(f);
  return n;
}

static void test_success(void **state) {
  (void)state;
  static const char *const apis[] = {"anthropic", "openai"};
  for (int a = 0; a < 2; a++) {
    kl_llm *l = client(apis[a], "ok");
    kl_buf reply = KL_BUF_INIT;
    kl_llm_usage u = KL_LLM_USAGE_INIT;
    assert_int_equal(complete(l, &reply, &u), 0);
    json_object *req = NULL, *v;
    assert_int_equal(requests_to(apis[a], "ok", &req), 1);
    assert_true(json_object_object_get_ex(req, "auth_ok", &v) &&
                json_object_get_boolean(v));
    json_object_put(req);
    if (a == 0) {
      /* the system block goes with cache_control, and caching is counted */
      assert_string_equal(reply.ptr,
                          "hello from anthropic [cache_control=ephemeral]");
      assert_int_equal(u.input_tokens, 120);
      assert_int_equal(u.output_tokens, 30);
      assert_int_equal(u.cache_write_tokens, 2000);
      assert_int_equal(u.cache_read_tokens, 0);
      assert_true(u.cost_known);
      /* 120 x 3 + 30 x 15 + 2000 x 3.75 per million */
      assert_true(fabs(u.cost_usd - 8.31e-3) < 1e-9);
      assert_int_equal(complete(l, &reply, &u), 0);
      assert_int_equal(u.cache_read_tokens, 2000);
      kl_llm_usage t = KL_LLM_USAGE_INIT;
      kl_llm_totals(l, &t);
      assert_int_equal(t.requests, 2);
      assert_int_equal(t.cache_read_tokens, 2000);
    } else {
      assert_string_equal(reply.ptr, "hello from openai");
      assert_int_equal(u.input_tokens, 400); /* 1000 - 600 cached */
      assert_int_equal(u.cache_read_tokens, 600);
      assert_int_equal(u.output_tokens, 40);
    }
    assert_int_equal(u.retries, 0);
    kl_buf_dispose(&reply);
    kl_llm_free(l);
  }
}

static void test_retries(void **state) {
  (void)state;
  static const char *const cases[][2] = {{"anthropic", "retry429"},
                                         {"openai", "retry429"},
                                         {"anthropic", "err500x2"},
                                         {"openai", "err500x2"},
                                         {"anthropic", "overloaded"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kl_llm *l = client(cases[i][0], cases[i][1]);
    kl_buf reply = KL_BUF_INIT;
    kl_llm_usage u = KL_LLM_USAGE_INIT;
    double t0 = now_s();
    if (complete(l, &reply, &u) != 0)
      fail_msg("%s/%s: %s", cases[i][0], cases[i][1], kl_error_last()->message);
    double waited = now_s() - t0;
    int want = strcmp(cases[i][1], "err500x2") == 0 ? 2 : 1;
    assert_int_equal(u.retries, want);
    assert_int_equal(requests_to(cases[i][0], cases[i][1], NULL), want + 1);
    if (strcmp(cases[i][1], "retry429") == 0)
      assert_true(waited >= 0.29); /* Retry-After: 0.3 was honoured */
    assert_non_null(strstr(reply.ptr, "hello"));
    kl_buf_dispose(&reply);
    kl_llm_free(l);
  }
}

static void test_failures(void **state) {
  (void)state;
  static const struct {
    const char *api, *scenario;
    int code;
    const char *text;
  } cases[] = {
      {"anthropic", "malformed", KL_EINVALID,
       "anthropic: malformed JSON in the reply (HTTP 200): {not json"},
      {"openai", "malformed", KL_EINVALID, "openai: malformed JSON"},
      {"anthropic", "empty", KL_EINVALID, "anthropic: an empty reply"},
      {"openai", "empty", KL_EINVALID, "openai: an empty reply"},
      {"openai", "bad_request", KL_EINVALID,
       "openai: HTTP 400 after 0 retries: {\"error\": {\"message\": "
       "\"max_tokens "
       "too large\"}}"},
      {"anthropic", "down", KL_EIO, "anthropic: HTTP 503 after 2 retries: "},
      {"anthropic", "echo_key", KL_EINVALID, "bad key ***"},
      {"anthropic", "always_cut", KL_EINVALID,
       "still cut off by the token limit"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kl_llm *l = client(cases[i].api, cases[i].scenario);
    kl_llm_free(l);
    kl_llm_config cfg = KL_LLM_CONFIG_INIT;
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s/%s%s", port,
             cases[i].api, cases[i].scenario,
             strcmp(cases[i].api, "openai") == 0 ? "/v1" : "");
    cfg.provider = cases[i].api;
    cfg.base_url = url;
    cfg.max_retries = 2;
    cfg.backoff_s = 0.01;
    cfg.max_continuations = 2;
    assert_int_equal(kl_llm_create(&l, &cfg), 0);
    kl_buf reply = KL_BUF_INIT;
    int rc = complete(l, &reply, NULL);
    if (rc != cases[i].code || !strstr(kl_error_last()->message, cases[i].text))
      fail_msg("%s/%s: wanted %d '%s', got %d '%s'", cases[i].api,
               cases[i].scenario, cases[i].code, cases[i].text, rc,
               rc ? kl_error_last()->message : "");
    kl_buf_dispose(&reply);
    kl_llm_free(l);
  }
}

static void test_timeout_and_size(void **state) {
  (void)state;
  if (!port) skip();
  char url[256];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/anthropic/slow", port);
  kl_llm_config cfg = KL_LLM_CONFIG_INIT;
  cfg.provider = "anthropic";
  cfg.base_url = url;
  cfg.timeout_ms = 300;
  cfg.max_retries = 1;
  cfg.backoff_s = 0.01;
  kl_llm *l;
  assert_int_equal(kl_llm_create(&l, &cfg), 0);
  kl_buf reply = KL_BUF_INIT;
  assert_int_equal(complete(l, &reply, NULL), KL_ETIMEOUT);
  assert_non_null(strstr(kl_error_last()->message, "anthropic: timed out"));
  assert_non_null(strstr(kl_error_last()->message, "after 1 retry"));
  kl_llm_free(l);
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/openai/huge/v1", port);
  cfg.provider = "openai";
  cfg.timeout_ms = 5000;
  cfg.max_response_bytes = 1 << 20;
  assert_int_equal(kl_llm_create(&l, &cfg), 0);
  assert_int_equal(complete(l, &reply, NULL), KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message, "larger than 1048576"));
  kl_llm_free(l);
  /* nothing listens here: a network error, retried, then reported */
  cfg.base_url = "http://127.0.0.1:9/v1";
  cfg.max_retries = 1;
  assert_int_equal(kl_llm_create(&l, &cfg), 0);
  assert_int_equal(complete(l, &reply, NULL), KL_EIO);
  kl_llm_free(l);
  kl_buf_dispose(&reply);
}

static void test_continuation(void **state) {
  (void)state;
  static const char *const apis[] = {"anthropic", "openai"};
  for (int a = 0; a < 2; a++) {
    kl_llm *l = client(apis[a], "truncated");
    kl_buf reply = KL_BUF_INIT;
    kl_llm_usage u = KL_LLM_USAGE_INIT;
    if (complete(l, &reply, &u) != 0)
      fail_msg("%s: %s", apis[a], kl_error_last()->message);
    assert_true(strncmp(reply.ptr, "part one, part two", 18) == 0);
    assert_int_equal(u.continuations, 1);
    assert_int_equal(requests_to(apis[a], "truncated", NULL), 2);
    kl_buf_dispose(&reply);
    kl_llm_free(l);
  }
}

/* A recording of real exchanges holds prompts and replies, never the key,
 * even when the server echoes it back. */
static void test_key_never_written(void **state) {
  (void)state;
  if (!port) skip();
  char dir[] = "/tmp/kl-netrec-XXXXXX";
  assert_non_null(mkdtemp(dir));
  static const char *const scen[] = {"ok", "echo_key"};
  for (int i = 0; i < 2; i++) {
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/anthropic/%s", port,
             scen[i]);
    kl_llm_config cfg = KL_LLM_CONFIG_INIT;
    cfg.provider = "anthropic";
    cfg.base_url = url;
    cfg.record_dir = dir;
    cfg.max_retries = 0;
    kl_llm *l;
    assert_int_equal(kl_llm_create(&l, &cfg), 0);
    kl_buf reply = KL_BUF_INIT;
    int rc = complete(l, &reply, NULL);
    assert_int_equal(rc, i == 0 ? 0 : KL_EINVALID);
    kl_buf_dispose(&reply);
    kl_llm_free(l);
  }
  DIR *d = opendir(dir);
  int files = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[600], buf[1 << 16];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    no_key_in(buf);
    remove(path);
    files++;
  }
  closedir(d);
  rmdir(dir);
  assert_int_equal(files, 2); /* the successful exchange: prompt, reply */
}

/* Configuration errors need no server. */
static void test_config(void **state) {
  (void)state;
  kl_llm *l;
  kl_llm_config cfg = KL_LLM_CONFIG_INIT;
  cfg.provider = "bard";
  assert_int_equal(kl_llm_create(&l, &cfg), KL_EINVALID);
  assert_non_null(
      strstr(kl_error_last()->message, "anthropic, openai, command or replay"));
  setenv("KL_LLM_PROVIDER", "openai", 1);
  setenv("KL_LLM_MODEL", "qwen2.5-coder", 1);
  cfg.provider = NULL;
  if (!kl_transport_curl()) skip();
  assert_int_equal(kl_llm_create(&l, &cfg), 0);
  assert_string_equal(kl_llm_name(l), "openai/qwen2.5-coder");
  kl_buf reply = KL_BUF_INIT;
  kl_llm_free(l);
  unsetenv("KL_LLM_PROVIDER");
  unsetenv("KL_LLM_MODEL");
  /* no key: a clear error before any request */
  char *saved =
      getenv("ANTHROPIC_API_KEY") ? strdup(getenv("ANTHROPIC_API_KEY")) : NULL;
  unsetenv("ANTHROPIC_API_KEY");
  cfg.provider = "anthropic";
  cfg.base_url = "http://127.0.0.1:9";
  assert_int_equal(kl_llm_create(&l, &cfg), 0);
  assert_int_equal(kl_llm_complete(l, "s", "u", &reply, NULL), KL_EINVALID);
  assert_string_equal(kl_error_last()->message,
                      "anthropic: no API key: set ANTHROPIC_API_KEY");
  kl_llm_free(l);
  if (saved) setenv("ANTHROPIC_API_KEY", saved, 1);
  free(saved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_success),
      cmocka_unit_test(test_retries),
      cmocka_unit_test(test_failures),
      cmocka_unit_test(test_timeout_and_size),
      cmocka_unit_test(test_continuation),
      cmocka_unit_test(test_key_never_written),
      cmocka_unit_test(test_config),
  };
  return cmocka_run_group_tests(tests, start_server, stop_server);
}
