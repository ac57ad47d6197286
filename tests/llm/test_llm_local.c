/* The providers that need no network: command (a local program gets the
 * prompt on standard input) and replay (the replies a recording kept), and
 * the recording itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"

static kl_llm *command(const char *const *argv, long timeout_ms,
                       const char *record) {
  kl_llm_config cfg = KL_LLM_CONFIG_INIT;
  cfg.provider = "command";
  cfg.command = argv;
  cfg.timeout_ms = timeout_ms;
  cfg.record_dir = record;
  kl_llm *l;
  if (kl_llm_create(&l, &cfg) != 0) fail_msg("%s", kl_error_last()->message);
  return l;
}

static void test_command(void **state) {
  (void)state;
  /* the prompt arrives whole on standard input, even a large one */
  const char *cat[] = {"cat", NULL};
  kl_llm *l = command(cat, 10000, NULL);
  size_t big = 3 << 20;
  char *user = malloc(big + 1);
  for (size_t i = 0; i < big; i++)
    user[i] = (char)('a' + i % 26);
  user[big] = '\0';
  kl_buf reply = KL_BUF_INIT;
  kl_llm_usage u = KL_LLM_USAGE_INIT;
  assert_int_equal(kl_llm_complete(l, "SYS", user, &reply, &u), 0);
  assert_int_equal(reply.size, big + 5);
  assert_memory_equal(reply.ptr, "SYS\n\n", 5);
  assert_memory_equal(reply.ptr + 5, user, big);
  assert_int_equal(u.requests, 1);
  assert_string_equal(kl_llm_name(l), "command/cat");
  kl_llm_free(l);
  free(user);
  /* failures: a status with its standard error, a timeout, silence, a
   * program that is not there */
  const char *fails[] = {"sh", "-c",
                         "cat >/dev/null; echo 'model busy' >&2; exit 3", NULL};
  l = command(fails, 10000, NULL);
  assert_int_equal(kl_llm_complete(l, "s", "u", &reply, NULL), KL_EIO);
  assert_string_equal(kl_error_last()->message,
                      "command: sh exited 3: model busy ");
  kl_llm_free(l);
  const char *slow[] = {"sleep", "5", NULL};
  l = command(slow, 200, NULL);
  assert_int_equal(kl_llm_complete(l, "s", "u", &reply, NULL), KL_ETIMEOUT);
  assert_non_null(strstr(kl_error_last()->message, "within 200 ms"));
  kl_llm_free(l);
  const char *silent[] = {"true", NULL};
  l = command(silent, 10000, NULL);
  assert_int_equal(kl_llm_complete(l, "s", "u", &reply, NULL), KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message, "an empty reply"));
  kl_llm_free(l);
  const char *missing[] = {"kernlab-no-such-program", NULL};
  l = command(missing, 10000, NULL);
  assert_int_equal(kl_llm_complete(l, "s", "u", &reply, NULL), KL_ENOTFOUND);
  kl_llm_free(l);
  /* configuration */
  kl_llm_config cfg = KL_LLM_CONFIG_INIT;
  cfg.provider = "command";
  assert_int_equal(kl_llm_create(&l, &cfg), KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message, "needs a command"));
  cfg.provider = "replay";
  cfg.replay_dir = "/nonexistent/kernlab";
  assert_int_equal(kl_llm_create(&l, &cfg), KL_EINVALID);
  kl_buf_dispose(&reply);
}

/* Record two exchanges, then replay them in order without the program. */
static void test_record_and_replay(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-replay-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char rec[600];
  snprintf(rec, sizeof(rec), "%s/llm", dir);
  const char *echo[] = {"sh", "-c", "wc -c | tr -d ' '", NULL};
  kl_llm *l = command(echo, 10000, rec);
  kl_buf a = KL_BUF_INIT, b = KL_BUF_INIT, r = KL_BUF_INIT;
  assert_int_equal(kl_llm_complete(l, "system", "first", &a, NULL), 0);
  assert_int_equal(kl_llm_complete(l, "system", "second one", &b, NULL), 0);
  assert_string_equal(a.ptr, "13\n"); /* "system\n\nfirst" */
  kl_llm_free(l);
  char path[700];
  snprintf(path, sizeof(path), "%s/0002.prompt.txt", rec);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[128] = "";
  assert_non_null(fgets(line, sizeof(line), f));
  assert_string_equal(line, "system\n");
  fclose(f);
  /* a second recording into the same folder (a resumed run's) goes on at
   * the next number: nothing is overwritten */
  l = command(echo, 10000, rec);
  assert_int_equal(kl_llm_complete(l, "s", "u", &r, NULL), 0);
  assert_string_equal(r.ptr, "4\n"); /* "s\n\nu" */
  kl_llm_free(l);
  f = fopen(path, "r"); /* 0002 unchanged */
  assert_non_null(f);
  assert_non_null(fgets(line, sizeof(line), f));
  assert_string_equal(line, "system\n");
  fclose(f);
  snprintf(path, sizeof(path), "%s/0003.reply.txt", rec);
  assert_true(access(path, F_OK) == 0);
  /* a prompt whose reply was never written (the process was stopped
   * between them) is stepped over by a replay */
  snprintf(path, sizeof(path), "%s/0003.reply.txt", rec);
  char moved[700];
  snprintf(moved, sizeof(moved), "%s/0004.reply.txt", rec);
  assert_int_equal(rename(path, moved), 0);
  snprintf(path, sizeof(path), "%s/0004.prompt.txt", rec);
  f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
  kl_llm_config cfg = KL_LLM_CONFIG_INIT;
  cfg.provider = "replay";
  cfg.replay_dir = rec;
  assert_int_equal(kl_llm_create(&l, &cfg), 0);
  assert_int_equal(kl_llm_complete(l, "anything", "else", &r, NULL), 0);
  assert_string_equal(r.ptr, a.ptr);
  assert_int_equal(kl_llm_complete(l, "anything", "else", &r, NULL), 0);
  assert_string_equal(r.ptr, b.ptr);
  assert_int_equal(kl_llm_complete(l, "anything", "else", &r, NULL), 0);
  assert_string_equal(r.ptr, "4\n"); /* 0004's: 0003 has no reply */
  assert_int_equal(kl_llm_complete(l, "x", "y", &r, NULL), KL_ENOTFOUND);
  assert_non_null(strstr(kl_error_last()->message, "no recorded reply #5 in"));
  assert_non_null(strstr(kl_error_last()->message, "(the recording has 4)"));
  kl_llm_usage t = KL_LLM_USAGE_INIT;
  kl_llm_totals(l, &t);
  assert_int_equal(t.requests, 3);
  assert_int_equal(t.cost_usd, 0);
  kl_llm_free(l);
  kl_buf_dispose(&a);
  kl_buf_dispose(&b);
  kl_buf_dispose(&r);
  snprintf(path, sizeof(path), "rm -rf %s", dir);
  assert_int_equal(system(path), 0);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

typedef struct diags {
  char text[4096];
} diags;

static int collect(const kl_error *e, void *payload) {
  diags *d = payload;
  size_t n = strlen(d->text);
  snprintf(d->text + n, sizeof(d->text) - n, "%d:%d: %s\n", e->line, e->column,
           e->text);
  return 0;
}

/* User file < case < environment < the caller; keys never from files. */
static void test_settings(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-settings-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char conf[600], cmd[1400], casedir[600];
  snprintf(conf, sizeof(conf), "%s/config.yaml", dir);
  write_file(conf, "llm:\n  provider: anthropic\n  model: claude-opus-4-1\n"
                   "  max_tokens: 4000\n  temperature: 0.2\n"
                   "  prices:\n    my-local: {input: 0.1, output: 0.2}\n");
  setenv("KL_CONFIG", conf, 1);
  unsetenv("KL_LLM_PROVIDER");
  unsetenv("KL_LLM_MODEL");
  unsetenv("KL_LLM_BASE_URL");
  kl_llm_settings *s;
  assert_int_equal(kl_llm_settings_load(&s, NULL), 0);
  assert_string_equal(kl_llm_settings_provider(s), "anthropic");
  assert_string_equal(kl_llm_settings_model(s), "claude-opus-4-1");
  assert_int_equal(kl_llm_settings_price_count(s), 1);
  assert_true(kl_llm_settings_price(s, 0)->output == 0.2);
  kl_llm_settings_free(s);
  /* the case's llm: section over the user file */
  snprintf(casedir, sizeof(casedir), "%s/case", dir);
  snprintf(cmd, sizeof(cmd), "cp -r %s/cases/host_saxpy %s", KL_SOURCE_DIR,
           casedir);
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof(cmd), "%s/case.yaml", casedir);
  FILE *f = fopen(cmd, "a");
  fputs("llm:\n  provider: command\n  command: [cat]\n  timeout_s: 30\n", f);
  fclose(f);
  kl_case *c;
  if (kl_case_load(&c, casedir, NULL) != 0)
    fail_msg("%s", kl_error_last()->message);
  assert_int_equal(kl_llm_settings_load(&s, c), 0);
  assert_string_equal(kl_llm_settings_provider(s), "command");
  assert_string_equal(kl_llm_settings_model(s), "claude-opus-4-1");
  kl_llm_config cfg = KL_LLM_CONFIG_INIT;
  kl_llm_settings_apply(s, &cfg);
  assert_string_equal(cfg.provider, "command");
  assert_string_equal(cfg.command[0], "cat");
  assert_int_equal(cfg.max_tokens, 4000);
  assert_int_equal(cfg.timeout_ms, 30000);
  kl_llm *l;
  assert_int_equal(kl_llm_create(&l, &cfg), 0);
  kl_buf reply = KL_BUF_INIT;
  assert_int_equal(kl_llm_complete(l, "a", "b", &reply, NULL), 0);
  assert_string_equal(reply.ptr, "a\n\nb");
  kl_buf_dispose(&reply);
  kl_llm_free(l);
  kl_llm_settings_free(s);
  /* the environment over the case; the caller over everything */
  setenv("KL_LLM_PROVIDER", "openai", 1);
  setenv("KL_LLM_BASE_URL", "http://127.0.0.1:8000/v1", 1);
  assert_int_equal(kl_llm_settings_load(&s, c), 0);
  kl_llm_config mine = KL_LLM_CONFIG_INIT;
  mine.model = "qwen";
  kl_llm_settings_apply(s, &mine);
  assert_string_equal(mine.provider, "openai");
  assert_string_equal(mine.base_url, "http://127.0.0.1:8000/v1");
  assert_string_equal(mine.model, "qwen");
  kl_llm_settings_free(s);
  unsetenv("KL_LLM_PROVIDER");
  unsetenv("KL_LLM_BASE_URL");
  kl_case_free(c);
  /* mistakes, every one located; a key in a file is one of them */
  write_file(conf, "llm:\n  provider: gemini\n  api_key: sk-nope\n"
                   "  max_tokens: lots\n  modle: x\n  command: cat\n");
  assert_int_equal(kl_llm_settings_load(&s, NULL), KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message,
                         "config.yaml:2:13: "
                         "unknown provider 'gemini'"));
  assert_non_null(strstr(kl_error_last()->message, "(and 4 more errors)"));
  /* the same in a case, through kl_case_load's diagnostics */
  snprintf(cmd, sizeof(cmd), "%s/case.yaml", casedir);
  f = fopen(cmd, "a");
  fputs("  api_key: sk-nope\n", f);
  fclose(f);
  diags d = {""};
  kl_case_options opts = KL_CASE_OPTIONS_INIT;
  opts.on_diag = collect;
  opts.payload = &d;
  assert_int_equal(kl_case_load(&c, casedir, &opts), KL_EINVALID);
  assert_non_null(strstr(d.text, ":3: API keys are never read from files: "
                                 "set ANTHROPIC_API_KEY"));
  unsetenv("KL_CONFIG");
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_command),
      cmocka_unit_test(test_record_and_replay),
      cmocka_unit_test(test_settings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
